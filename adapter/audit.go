package adapter

import (
	"context"
	"encoding/json"
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
// it reads only the public Call and Outcome it is handed, like any other
// observer, so concurrent calls cannot stamp each other's rows. The trace a
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
			row := rowOf(call, out, tool)
			if a, ok := attempts.LoadAndDelete(call); ok {
				row.AttemptID = a.(string)
			}
			r.Record(ctx, row)
			if u := out.Unfinished; u != nil && row.AttemptID != "" {
				// The final row is written; the handler's late end, if it
				// comes while the process lives, is added to it.
				go recordLate(context.WithoutCancel(ctx), r, row, u)
			}
		},
	}
	if !tool.Destructive() {
		return h
	}
	h.BeforeHandle = func(ctx context.Context, call *Call) error {
		row := rowOf(call, nil, tool)
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

// rowOf builds the audit row of a call; out is nil for a pending row.
func rowOf(call *Call, out *Outcome, tool *Tool) *audit.Row {
	trace := call.Trace()
	row := &audit.Row{
		CallID:            call.ID,
		Status:            audit.StatusDone,
		Tool:              call.Tool,
		Writer:            tool.Name(),
		Source:            string(call.Source),
		SessionID:         call.SessionID,
		Tenant:            call.Tenant(),
		TraceID:           trace.Root,
		SpanID:            trace.SpanID,
		ParentSpanID:      trace.Parent,
		Sampled:           trace.Sampled,
		LinkedTraceparent: trace.Link,
		StartedAt:         call.StartedAt.UTC(),
		Arguments:         call.Arguments,
		ReceivedArgs:      call.received,
		Dimensions:        call.Dimensions(),
		LambdaRequestID:   call.Lambda.RequestID,
		FunctionName:      call.Lambda.FunctionName,
		FunctionVersion:   call.Lambda.FunctionVersion,
		ColdStart:         call.Lambda.ColdStart,
		Destructive:       tool.Destructive() && call.Tool == tool.Name(),
		TaskID:            call.TaskID(),
	}
	if m := call.MCP; m != nil {
		row.MCPEra, row.MCPMethod, row.ProtocolVersion = string(m.Era), m.Method, m.ProtocolVersion
		row.MCPOutcome, row.MCPRound = m.Outcome, m.Round
		if m.ClientInfo != nil {
			row.ClientName, row.ClientVersion = m.ClientInfo.Name, m.ClientInfo.Version
		}
	}
	if id := call.Caller(); id != nil {
		row.CallerSubject, row.CallerAuthMethod, row.CallerClientID = id.Subject, id.AuthMethod, id.ClientID
		row.CallerIssuer = id.Issuer
		row.CallerIP, row.CallerUserAgent, row.CallerRoleSession = id.IP, id.UserAgent, id.RoleSession
	}
	if id := call.UnverifiedCaller(); id != nil {
		row.UnverifiedCaller = id.Subject
		if id.Issuer != "" {
			row.UnverifiedCaller += "@" + id.Issuer
		}
	}
	if row.ReceivedArgs == nil && call.argsKnown {
		row.ReceivedArgs = json.RawMessage{} // absent: digested as {}
	}
	if ref := call.argsRef; ref != nil {
		// Read from the payloads bucket and checked against the token:
		// the reference's size and SHA-256 are the canonical arguments'.
		row.ArgsBytes, row.ArgsSHA256 = ref.Size, ref.SHA256
		row.ArgsObject = &audit.Object{Bucket: ref.Bucket, Key: ref.Key, VersionID: ref.VersionID}
	}
	if out == nil {
		return row
	}
	row.DurationMs = float64(out.Duration.Microseconds()) / 1000
	row.OK = out.Err == nil
	row.Stage = string(out.Stage)
	row.ResultBytes, row.Result = len(out.Result), out.Result
	if ref := out.ResultRef; ref != nil {
		row.ResultBytes, row.ResultSHA256 = int(ref.Size), ref.SHA256
		row.ResultObject = &audit.Object{Bucket: ref.Bucket, Key: ref.Key, VersionID: ref.VersionID}
	}
	row.Panicked = out.Panicked
	row.Cancelled = out.Public != nil && out.Public.Code == CodeCancelled
	if out.Err != nil {
		pub := out.Public
		row.ErrorCode, row.ErrorMessage = string(pub.Code), pub.Message
		var e *Error
		if !errors.As(out.Err, &e) || e.Unwrap() != nil {
			// The caller's copy was scrubbed or summarised: keep the
			// raw error where only the audit can see it.
			row.RawError = out.Err.Error()
		}
		if pub.Details != nil {
			if b, err := json.Marshal(pub.Details); err == nil {
				row.ErrorDetails = b
			}
		}
		if row.Destructive && out.Stage == StageHandler && (pub.Code == CodeTimeout || pub.Code == CodeCancelled) {
			// Answered before the handler was seen to finish (or
			// cancelled while it ran): it may have taken effect.
			row.Outcome = audit.OutcomeUnknown
		}
	}
	return row
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
