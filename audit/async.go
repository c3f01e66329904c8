package audit

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Queue writes the final rows of calls after the calls have been answered
// (docs/decisions/0023-audit-after-response.md). Each queued row is written
// by a goroutine of its own through [Auditor.Record] — the same conditional
// PutItem, retries, span and fallback line — under its invocation's
// deadline. Rows are grouped by Lambda request id, so the function's
// internal extension can hold each invocation open until its rows are
// settled: [Queue.End] says an invocation has queued all it will, and
// [Queue.Wait] returns once all of them are written or printed.
//
// Write-ahead (pending) rows never go through the Queue: a destructive
// tool's evidence is written before its handler runs.
type Queue struct {
	a   *Auditor
	mu  sync.Mutex
	inv map[string]*invocation
	all sync.WaitGroup // every row queued and not yet settled
	// flight holds the rows of destructive calls (with an attempt id)
	// until they are settled, so a late outcome waits for its row.
	flight map[string]chan struct{}
}

// invocation is one Lambda request's rows.
type invocation struct {
	rows   map[*Row]*Row // queued row → the copy printed if it is abandoned
	ended  bool
	waited bool
	// answered is closed by End: the rows' writes start only then, so that
	// they do not compete with the answer for the CPU while it is on its way
	// to the caller.
	answered chan struct{}
	done     chan struct{} // closed when ended and rows is empty
}

// NewQueue returns a Queue writing through a.
func NewQueue(a *Auditor) *Queue {
	return &Queue{a: a, inv: map[string]*invocation{}, flight: map[string]chan struct{}{}}
}

// Auditor returns the Auditor the Queue writes through.
func (q *Queue) Auditor() *Auditor { return q.a }

// get returns requestID's invocation; q.mu is held.
func (q *Queue) get(requestID string) *invocation {
	v := q.inv[requestID]
	if v == nil {
		v = &invocation{rows: map[*Row]*Row{}, answered: make(chan struct{}), done: make(chan struct{})}
		q.inv[requestID] = v
	}
	return v
}

// end marks v answered; q.mu is held.
func (v *invocation) end() {
	if !v.ended {
		v.ended = true
		close(v.answered)
	}
	v.settled()
}

// settled closes v's done channel once nothing more can come; q.mu is held.
func (v *invocation) settled() {
	if v.ended && len(v.rows) == 0 {
		select {
		case <-v.done:
		default:
			close(v.done)
		}
	}
}

// Enqueue queues the final row of a call of invocation requestID and
// returns at once; once [Queue.End] says the invocation is answered (or at
// ctx's deadline, whichever is first), the row is written by
// [Auditor.Record] with ctx's values
// and deadline but not its cancellation (the invocation's context ends
// when the call is answered). The caller must not touch row afterwards.
func (q *Queue) Enqueue(ctx context.Context, requestID string, row *Row) {
	if q == nil || row == nil {
		return
	}
	// Settle the ids now, so a copy printed by Wait names the same span
	// and trace as the row written.
	q.a.settleIDs(row)
	spare := *row
	q.mu.Lock()
	v := q.get(requestID)
	v.rows[row] = &spare
	var landed chan struct{}
	if row.AttemptID != "" {
		landed = make(chan struct{})
		q.flight[row.CallID+"\x00"+row.AttemptID] = landed
	}
	q.all.Add(1)
	q.mu.Unlock()
	go func() {
		defer q.all.Done()
		wctx := context.WithoutCancel(ctx)
		if d, ok := ctx.Deadline(); ok {
			var cancel context.CancelFunc
			wctx, cancel = context.WithDeadline(wctx, d)
			defer cancel()
		}
		select {
		case <-v.answered:
		case <-wctx.Done():
		}
		q.a.Record(wctx, row)
		q.mu.Lock()
		delete(v.rows, row)
		v.settled()
		if landed != nil {
			delete(q.flight, row.CallID+"\x00"+row.AttemptID)
			close(landed)
		}
		q.mu.Unlock()
	}()
}

// Late is [Auditor.Late] once the final row it adds to has been written (or
// printed): an update sent before it would be overwritten by it.
func (q *Queue) Late(ctx context.Context, row *Row) {
	if q == nil || row == nil {
		return
	}
	q.mu.Lock()
	landed := q.flight[row.CallID+"\x00"+row.AttemptID]
	q.mu.Unlock()
	if landed != nil {
		select {
		case <-landed:
		case <-ctx.Done():
		}
	}
	q.a.Late(ctx, row)
}

// End says invocation requestID is answered and has queued every row it
// will; its rows' writes start now. Until then Wait keeps the invocation
// open even with nothing queued yet: the extension can hear of an
// invocation before the handler has started.
func (q *Queue) End(requestID string) {
	if q == nil {
		return
	}
	q.mu.Lock()
	v := q.get(requestID)
	v.end()
	if v.waited {
		delete(q.inv, requestID)
	}
	q.mu.Unlock()
}

// Wait returns once invocation requestID has ended and its rows are all
// written or printed as fallback lines, or at limit (a zero limit: no
// limit), whichever is first. At limit, each row still in flight is printed
// as a fallback line at once, so that nothing is lost if the environment is
// frozen or shut down now; if its write still completes later, [Replay]
// finds the row present. It reports whether every row was settled in time.
func (q *Queue) Wait(requestID string, limit time.Time) bool {
	if q == nil {
		return true
	}
	q.mu.Lock()
	v := q.get(requestID)
	v.waited = true
	if v.ended {
		delete(q.inv, requestID)
	}
	q.mu.Unlock()
	var timeout <-chan time.Time
	if !limit.IsZero() {
		t := time.NewTimer(time.Until(limit))
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-v.done:
		return true
	case <-timeout:
	}
	q.mu.Lock()
	spares := make([]*Row, 0, len(v.rows))
	for _, s := range v.rows {
		spares = append(spares, s)
	}
	q.mu.Unlock()
	for _, s := range spares {
		q.a.prepare(s, StatusDone)
		q.a.fallback(s, errors.New("audit: the invocation's deadline came before the row was written"))
	}
	return len(spares) == 0
}

// Drain waits until every queued row is settled or ctx ends (SIGTERM: the
// environment is shutting down).
func (q *Queue) Drain(ctx context.Context) error {
	if q == nil {
		return nil
	}
	done := make(chan struct{})
	go func() { q.all.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
