package audit

import (
	"context"
	"errors"
	"maps"
	"sync"
	"time"
)

// Queue writes the final rows of calls after the calls have been answered
// (docs/decisions/0023-audit-after-response.md, 0039-audit-row-from-snapshot.md).
// A queued row costs its call only a few cheap copies: nothing is built,
// marshalled, hashed, sent or even scheduled until its invocation is
// answered ([Queue.End]); then each row is built and written by a
// goroutine of its own through [Auditor.Record] — the same conditional
// PutItem, retries, span and fallback line — under its invocation's
// deadline. Rows are grouped by Lambda request id, so whatever holds the
// invocation open (under adapter.Start, the runtime itself, before it asks
// for the next invocation) can wait until its rows are settled:
// [Queue.End] says an invocation has queued all it will, and [Queue.Wait]
// returns once all of them are written or printed.
//
// Write-ahead (pending) rows never go through the Queue: a destructive
// tool's evidence is written before its handler runs.
type Queue struct {
	a   *Auditor
	mu  sync.Mutex
	inv map[string]*invocation
	all sync.WaitGroup // every row queued and not yet settled
	// unsettled are those rows, with their invocations (which Wait may
	// have forgotten already).
	unsettled map[*queued]*invocation
	// flight holds the rows of destructive calls (with an attempt id)
	// until they are settled, so a late outcome waits for its row.
	flight map[string]chan struct{}
	// idle, when writers are kept ([Queue.KeepWriters]), hands a row to a
	// writer goroutine waiting for one.
	idle chan job
	keep time.Duration
}

// job is one row for a writer: r, of invocation v.
type job struct {
	v *invocation
	r *queued
}

// invocation is one Lambda request's rows.
type invocation struct {
	// rows are the rows queued and not yet settled (written, printed, or
	// abandoned at the limit).
	rows   map[*queued]struct{}
	ended  bool
	waited bool
	done   chan struct{} // closed when ended and rows is empty
}

// queued is one final row in the queue: how to build it, and the context
// its write runs under.
type queued struct {
	ctx   context.Context // values and deadline; never its cancellation
	build func() *Row
	// started: a writer has the row (built or building it).
	started bool
	// flight is the row's key in Queue.flight, "" for a row without an
	// attempt id.
	flight string
	landed chan struct{}
}

// NewQueue returns a Queue writing through a.
func NewQueue(a *Auditor) *Queue {
	return &Queue{a: a, inv: map[string]*invocation{}, unsettled: map[*queued]*invocation{}, flight: map[string]chan struct{}{}}
}

// KeepWriters makes each goroutine that writes a row wait up to idle for
// the next row before it ends, and returns q; call it before the first row
// is queued. By default each row is written by a goroutine of its own. A
// row's write goes deep through the AWS SDK's middleware, so a new
// goroutine grows its stack from the minimum, copying it at each doubling,
// on every row: in a Lambda function environment, whose rows come one
// invocation after another, that was 7 % of the function's CPU with the
// audit on (docs/benchmarks.md, "The row leaves the caller's path"); a
// kept writer's stack is already grown. The writers' channel belongs to
// the goroutine that calls KeepWriters: not for a Queue made outside a
// testing/synctest bubble and used inside it.
func (q *Queue) KeepWriters(idle time.Duration) *Queue {
	q.idle, q.keep = make(chan job), idle
	return q
}

// spawn has r written by a writer goroutine: a kept one waiting for a row
// if there is one, else a new one.
func (q *Queue) spawn(v *invocation, r *queued) {
	if q.idle != nil {
		select {
		case q.idle <- job{v, r}:
			return
		default:
		}
	}
	go q.writer(job{v, r})
}

// writer writes j, then, when writers are kept, each row handed to it
// until none comes for q.keep.
func (q *Queue) writer(j job) {
	q.write(j.v, j.r)
	if q.idle == nil {
		return
	}
	t := time.NewTimer(q.keep)
	defer t.Stop()
	for {
		select {
		case j = <-q.idle:
		case <-t.C:
			return
		}
		q.write(j.v, j.r)
		t.Reset(q.keep)
	}
}

// Auditor returns the Auditor the Queue writes through.
func (q *Queue) Auditor() *Auditor { return q.a }

// get returns requestID's invocation; q.mu is held.
func (q *Queue) get(requestID string) *invocation {
	v := q.inv[requestID]
	if v == nil {
		v = &invocation{rows: map[*queued]struct{}{}, done: make(chan struct{})}
		q.inv[requestID] = v
	}
	return v
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
// returns at once; once [Queue.End] says the invocation is answered, the
// row is written by [Auditor.Record] with ctx's values and deadline but
// not its cancellation (the invocation's context ends when the call is
// answered). The caller must not touch row afterwards.
func (q *Queue) Enqueue(ctx context.Context, requestID string, row *Row) {
	if q == nil || row == nil {
		return
	}
	// Settle the ids now, so a copy printed by Wait names the same span
	// and trace as the row written.
	q.a.settleIDs(row)
	spare := *row
	var handed sync.Once
	q.EnqueueFunc(ctx, requestID, row.CallID, row.AttemptID, func() *Row {
		first := false
		handed.Do(func() { first = true })
		if first {
			return row
		}
		s := spare
		return &s
	})
}

// EnqueueFunc is [Queue.Enqueue] for a row not built yet: the call's
// snapshot, which build turns into its final row once the invocation is
// answered, off the caller's path. callID and attemptID are the row's own
// (a [Queue.Late] for the same attempt waits for it).
//
// build may be called more than once — for the row written and, when the
// invocation's limit comes first, for the copy printed as a fallback line —
// possibly concurrently: each call must return a new row with the same
// content, its ids (StartedAt, TraceID, SpanID) included, and must read
// only what no one changes any more.
func (q *Queue) EnqueueFunc(ctx context.Context, requestID, callID, attemptID string, build func() *Row) {
	if q == nil || build == nil {
		return
	}
	r := &queued{ctx: ctx, build: build}
	q.mu.Lock()
	v := q.get(requestID)
	v.rows[r] = struct{}{}
	q.unsettled[r] = v
	if attemptID != "" {
		r.flight, r.landed = callID+"\x00"+attemptID, make(chan struct{})
		q.flight[r.flight] = r.landed
	}
	q.all.Add(1)
	start := v.ended // queued after its invocation's answer: write it now
	if start {
		r.started = true
	}
	q.mu.Unlock()
	if start {
		q.spawn(v, r)
	}
}

// write builds and writes r, then settles it.
func (q *Queue) write(v *invocation, r *queued) {
	defer q.all.Done()
	ctx := context.WithoutCancel(r.ctx)
	if d, ok := r.ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d)
		defer cancel()
	}
	q.a.Record(ctx, r.build())
	q.mu.Lock()
	q.settle(v, r)
	q.mu.Unlock()
}

// settle forgets r, written or dropped, and releases a Late waiting for
// it; q.mu is held.
func (q *Queue) settle(v *invocation, r *queued) {
	delete(v.rows, r)
	delete(q.unsettled, r)
	v.settled()
	if r.landed != nil {
		delete(q.flight, r.flight)
		close(r.landed)
		r.landed = nil
	}
}

// start hands every row of v not started yet to a writer; q.mu is held.
// The caller starts the returned writes once it has unlocked.
func (v *invocation) start() []*queued {
	var out []*queued
	for r := range v.rows {
		if !r.started {
			r.started = true
			out = append(out, r)
		}
	}
	return out
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
// will; its rows are built and written now. Until then Wait keeps the
// invocation open even with nothing queued yet: the extension can hear of
// an invocation before the handler has started.
func (q *Queue) End(requestID string) {
	if q == nil {
		return
	}
	q.mu.Lock()
	v := q.get(requestID)
	v.ended = true
	rows := v.start()
	v.settled()
	if v.waited {
		delete(q.inv, requestID)
	}
	q.mu.Unlock()
	for _, r := range rows {
		q.spawn(v, r)
	}
}

// Wait returns once invocation requestID has ended and its rows are all
// written or printed as fallback lines, or at limit (a zero limit: no
// limit), whichever is first. At limit, each row not settled is printed as
// a fallback line at once, so that nothing is lost if the environment is
// frozen or shut down now: a row still being written may land later
// ([Replay] then finds it present); one whose invocation never ended is
// never written. It reports whether every row was settled in time.
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
	rows := make(map[*queued]*invocation, len(v.rows))
	for r := range v.rows {
		rows[r] = v
	}
	q.mu.Unlock()
	return q.abandon(rows, errors.New("audit: the invocation's deadline came before the row was written")) == 0
}

// abandon prints each of rows (of v) not settled yet as a fallback line,
// and drops those not started: they will never be written. It returns how
// many it printed.
func (q *Queue) abandon(rows map[*queued]*invocation, reason error) int {
	q.mu.Lock()
	var left []*queued
	for r, v := range rows {
		if _, ok := q.unsettled[r]; !ok {
			continue
		}
		left = append(left, r)
		if !r.started {
			q.settle(v, r)
			q.all.Done()
		}
	}
	q.mu.Unlock()
	for _, r := range left {
		row := r.build()
		q.a.settleIDs(row)
		q.a.prepare(row, StatusDone)
		q.a.fallback(row, reason)
	}
	return len(left)
}

// Drain writes every queued row, its invocation answered or not (SIGTERM:
// the environment is shutting down), and waits until all are settled or
// ctx ends; then the rows still unsettled are printed as fallback lines.
func (q *Queue) Drain(ctx context.Context) error {
	if q == nil {
		return nil
	}
	type start struct {
		v *invocation
		r *queued
	}
	var starts []start
	q.mu.Lock()
	for r, v := range q.unsettled {
		if !r.started {
			r.started = true
			starts = append(starts, start{v, r})
		}
	}
	q.mu.Unlock()
	for _, s := range starts {
		q.spawn(s.v, s.r)
	}
	done := make(chan struct{})
	go func() { q.all.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	q.mu.Lock()
	left := maps.Clone(q.unsettled)
	q.mu.Unlock()
	q.abandon(left, errors.New("audit: the environment shut down before the row was written"))
	return ctx.Err()
}
