package mcpfntest

import (
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
)

// AuditTo records every call with r as well: r gets each row as the adapter
// hands it over, and its answer decides whether a destructive call may run
// (an earlier attempt's row, or a failed write, refuses it). The rows still
// reach [Result.Rows] and [Function.Rows]. Give it to [New] in place of
// adapter.WithAuditor, typically with an *audit.Auditor writing into a table
// of [DB]:
//
//	f := mcpfntest.New(t, tool, mcpfntest.AuditTo(audit.New(audit.Config{Table: table, Client: db.Client()})))
//
// Like adapter.WithAuditor, the audit's hook set takes its place among the
// hook sets where the option is given: give it before any
// adapter.WithHooks, so that its rows carry their dimensions.
func AuditTo(r adapter.Recorder) adapter.Option { return adapter.WithAuditor(recorder{next: r}) }

// recorder is the kit's adapter.Recorder. The invocation that a row belongs
// to travels in the context the adapter hands the recorder, which is the
// invocation's own (see Function.invoke): rows reach their call's Result
// without any registry, and concurrent calls cannot mix them up.
type recorder struct{ next adapter.Recorder }

type invocationKey struct{}

// invocation collects the rows one invocation hands to the audit.
type invocation struct {
	f     *Function
	mu    sync.Mutex
	rows  []audit.Row
	final bool
}

func invocationOf(ctx context.Context) *invocation {
	inv, _ := ctx.Value(invocationKey{}).(*invocation)
	return inv
}

func (inv *invocation) add(row *audit.Row) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	inv.rows = append(inv.rows, cloneRow(row))
	inv.final = inv.final || row.Status == audit.StatusDone
}

// handed returns the invocation's rows and whether a final one is among them.
func (inv *invocation) handed() ([]audit.Row, bool) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	return slices.Clone(inv.rows), inv.final
}

func (r recorder) Pending(ctx context.Context, row *audit.Row) (*audit.Row, error) {
	var prior *audit.Row
	if inv := invocationOf(ctx); inv != nil {
		inv.add(row)
		prior = inv.f.audit.pending(row)
	}
	if r.next != nil {
		c := cloneRow(row)
		return r.next.Pending(ctx, &c)
	}
	return prior, nil
}

func (r recorder) Record(ctx context.Context, row *audit.Row) {
	if inv := invocationOf(ctx); inv != nil {
		inv.add(row)
		inv.f.audit.record(row)
	}
	if r.next != nil {
		c := cloneRow(row)
		r.next.Record(ctx, &c)
	}
}

func (r recorder) Late(ctx context.Context, row *audit.Row) {
	if inv := invocationOf(ctx); inv != nil {
		inv.f.audit.late(row)
	}
	if r.next != nil {
		c := cloneRow(row)
		r.next.Late(ctx, &c)
	}
}

// auditLog is a Function's audit in memory: every row handed over, and the
// rule of the audit table that decides whether a destructive call may run —
// one row per call id, which a pending row never overwrites.
type auditLog struct {
	mu     sync.Mutex
	rows   []audit.Row
	stored map[string]audit.Row // by call id, as the table would hold them
}

// pending logs a write-ahead row and returns the row an earlier attempt of
// its call id left, if any.
func (l *auditLog) pending(row *audit.Row) *audit.Row {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rows = append(l.rows, cloneRow(row))
	if prior, ok := l.stored[row.CallID]; ok {
		return &prior
	}
	l.store(row)
	return nil
}

// record logs a final row; the table keeps it where it creates the call's
// row or completes its own attempt's pending row.
func (l *auditLog) record(row *audit.Row) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rows = append(l.rows, cloneRow(row))
	prior, ok := l.stored[row.CallID]
	if !ok || (prior.Status == audit.StatusPending && prior.AttemptID == row.AttemptID) {
		l.store(row)
	}
}

// late adds a late outcome to its attempt's final row, once.
func (l *auditLog) late(row *audit.Row) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range l.rows {
		r := &l.rows[i]
		if r.CallID == row.CallID && r.AttemptID == row.AttemptID && r.Status == audit.StatusDone && r.LateOutcome == "" {
			r.LateOutcome, r.LateErrorCode, r.FinishedAt = row.LateOutcome, row.LateErrorCode, row.FinishedAt
		}
	}
}

func (l *auditLog) store(row *audit.Row) {
	if l.stored == nil {
		l.stored = map[string]audit.Row{}
	}
	l.stored[row.CallID] = cloneRow(row)
}

func (l *auditLog) all() []audit.Row {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]audit.Row, len(l.rows))
	for i := range l.rows {
		out[i] = cloneRow(&l.rows[i])
	}
	return out
}

// cloneRow copies a row deeply enough that no one else's later change (the
// auditor prepares the rows it writes in place) reaches the copy.
func cloneRow(r *audit.Row) audit.Row {
	c := *r
	c.Dimensions = maps.Clone(r.Dimensions)
	c.Arguments = slices.Clone(r.Arguments)
	c.ErrorDetails = slices.Clone(r.ErrorDetails)
	if r.FinishedAt != nil {
		at := *r.FinishedAt
		c.FinishedAt = &at
	}
	return c
}
