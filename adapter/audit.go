package adapter

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/mcpfn/mcpfn/audit"
)

// Recorder receives the audit rows of calls; *audit.Auditor is the
// implementation (DynamoDB + X-Ray, with a log fallback).
type Recorder interface {
	// Pending writes the write-ahead row of a destructive tool's call. It
	// returns the row an earlier attempt of the same call id left (prior:
	// the call must not run again), or an error when no row could be
	// written (the call must not run without evidence).
	Pending(ctx context.Context, row *audit.Row) (prior *audit.Row, err error)
	// Record writes the call's final row and span. The final row completes
	// only the pending row of its own attempt (row.AttemptID).
	Record(ctx context.Context, row *audit.Row)
	// Late adds to a final row how a handler that outlived its call ended
	// (row carries CallID, AttemptID, LateOutcome, LateErrorCode,
	// FinishedAt).
	Late(ctx context.Context, row *audit.Row)
}

// auditHooks is the audit stage of the call path: a hook set whose
// BeforeHandle writes a destructive tool's pending row and whose
// AfterToolCall writes every call's final row. It is an ordinary hook set:
// it reads only the Call and Outcome it is handed, like any other observer,
// so concurrent calls cannot stamp each other's rows. In the after-response
// mode its AfterToolCall only takes the call's snapshot (auditrow.go): the
// row is built, marshalled and written once the answer is out. The trace a
// row names is call.Trace(), settled when the call was built, so a pending
// and a final row always agree on it.
//
// A destructive call runs at most once per call id (ADR 0016): the pending
// row is the claim. A call id that already has a row is refused with
// CONFLICT, and a pending row that cannot be written refuses the call with
// UNAVAILABLE: a destructive tool never runs without evidence.
func auditHooks(r Recorder, tool *Tool, logf func(string, ...any)) Hooks {
	// attempts holds the attempt id of each call whose pending row was
	// written, from its BeforeHandle to its AfterToolCall: only that call's
	// final row may complete it.
	var attempts sync.Map // *Call → string
	h := Hooks{
		AfterToolCall: func(ctx context.Context, call *Call, out *Outcome) {
			var attempt string
			if a, ok := attempts.LoadAndDelete(call); ok {
				attempt = a.(string)
			}
			snap := snapshotOf(call, out, tool, attempt)
			if q, ok := r.(queuedRecorder); ok {
				// After the response: the snapshot is all the call
				// pays; its row is built once the answer is out.
				q.q.EnqueueFunc(ctx, call.Lambda.RequestID, call.ID, attempt, snap.row)
			} else {
				r.Record(ctx, snap.row())
			}
			if u := out.Unfinished; u != nil && attempt != "" {
				// The final row is written (or queued: Late waits for
				// it); the handler's late end, if it comes while the
				// process lives, is added to it.
				go recordLate(context.WithoutCancel(ctx), r, snap.lateRow(), u)
			}
		},
	}
	if !tool.Destructive() {
		return h
	}
	h.BeforeHandle = func(ctx context.Context, call *Call) error {
		row := snapshotOf(call, nil, tool, "").row()
		row.Status = audit.StatusPending
		row.AttemptID = audit.NewAttemptID()
		attempts.Store(call, row.AttemptID)
		// The write belongs to the Lambda's time, not the call's: it must
		// survive the call's cancellation but not outlive the invocation.
		wctx := context.WithoutCancel(ctx)
		if !call.Lambda.Deadline.IsZero() {
			var cancel context.CancelFunc
			wctx, cancel = context.WithDeadline(wctx, call.Lambda.Deadline)
			defer cancel()
		}
		prior, err := r.Pending(wctx, row)
		switch {
		case err != nil:
			return NewError(CodeUnavailable, "the audit trail cannot be written right now, so this destructive tool did not run").
				WithHint("retry shortly; nothing was done").WithCause(err)
		case prior != nil:
			logf("mcpfn: refused a second execution of destructive call %s (earlier attempt: status %s, started %s)",
				call.ID, prior.Status, prior.StartedAt.UTC().Format(time.RFC3339Nano))
			return alreadyExecuted(call.ID, prior)
		}
		return nil
	}
	return h
}

// alreadyExecuted is the CONFLICT of a destructive call id that already has
// an audit row: what that row says, so the caller can tell what happened
// without running the call again. The earlier error message is left out: only
// its code, a contract, is repeated.
func alreadyExecuted(callID string, prior *audit.Row) *Error {
	earlier := map[string]any{"status": prior.Status}
	if !prior.StartedAt.IsZero() {
		earlier["startedAt"] = prior.StartedAt.UTC().Format(time.RFC3339Nano)
	}
	if prior.Status == audit.StatusDone {
		earlier["ok"] = prior.OK
		if !prior.OK {
			earlier["errorCode"], earlier["stage"] = prior.ErrorCode, prior.Stage
		}
	}
	if prior.Outcome != "" {
		earlier["outcome"] = prior.Outcome
	}
	if prior.LateOutcome != "" {
		earlier["lateOutcome"] = prior.LateOutcome
	}
	return NewError(CodeConflict, "this destructive call was already executed: its call id has an audit row from an earlier attempt").
		WithDetails(map[string]any{"callId": callID, "earlierAttempt": earlier}).
		WithHint("do not resend this call; earlierAttempt says what the first attempt did (pending: it has not finished or its process died). To act again, make a new call")
}

// recordLate waits for a handler that outlived its call and adds its end to
// the call's final row.
func recordLate(ctx context.Context, r Recorder, final *audit.Row, u *Unfinished) {
	<-u.Done()
	finished := u.FinishedAt().UTC()
	row := &audit.Row{CallID: final.CallID, Writer: final.Writer, Tool: final.Tool, AttemptID: final.AttemptID, LateOutcome: "ok", FinishedAt: &finished}
	switch err := u.Err(); {
	case err == nil:
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		// It noticed its context at last.
		row.LateOutcome, row.LateErrorCode = "error", string(CodeTimeout)
	default:
		row.LateOutcome, row.LateErrorCode = "error", string(CodeOf(err))
	}
	r.Late(ctx, row)
}

// queuedRecorder is the Recorder of the after-response mode: pending rows
// are written at once, as ever, and final rows are queued on q, written
// after the call is answered.
type queuedRecorder struct{ q *audit.Queue }

func (r queuedRecorder) Pending(ctx context.Context, row *audit.Row) (*audit.Row, error) {
	return r.q.Auditor().Pending(ctx, row)
}

func (r queuedRecorder) Record(ctx context.Context, row *audit.Row) {
	r.q.Enqueue(ctx, row.LambdaRequestID, row)
}

func (r queuedRecorder) Late(ctx context.Context, row *audit.Row) { r.q.Late(ctx, row) }
