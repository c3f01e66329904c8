package adapter

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/mcpfn/mcpfn/audit"
)

// auditHooks is the audit stage of the call path: a hook set whose
// BeforeHandle writes a destructive tool's pending row and whose
// AfterToolCall writes every call's final row. It reads only the Call and
// Outcome it is handed, so concurrent calls cannot stamp each other's rows.
func auditHooks(r Recorder, tool *Tool) Hooks {
	return Hooks{
		BeforeHandle: func(ctx context.Context, call *Call) error {
			if tool.destructive {
				row := rowOf(call, nil, tool)
				row.Status = audit.StatusPending
				// The write belongs to the Lambda's time, not the call's:
				// it must survive the call's cancellation but not outlive
				// the invocation.
				wctx := context.WithoutCancel(ctx)
				if !call.Lambda.Deadline.IsZero() {
					var cancel context.CancelFunc
					wctx, cancel = context.WithDeadline(wctx, call.Lambda.Deadline)
					defer cancel()
				}
				r.Pending(wctx, row)
				// An untraced call's row gets a trace id from the auditor;
				// the final row must name the same one.
				call.auditTrace = row.TraceID
			}
			return nil
		},
		AfterToolCall: func(ctx context.Context, call *Call, out *Outcome) {
			r.Record(ctx, rowOf(call, out, tool))
		},
	}
}

// rowOf builds the audit row of a call; out is nil for a pending row.
func rowOf(call *Call, out *Outcome, tool *Tool) *audit.Row {
	row := &audit.Row{
		CallID:            call.ID,
		Status:            audit.StatusDone,
		Tool:              call.Tool,
		Source:            string(call.Source),
		SessionID:         call.SessionID,
		Tenant:            call.Tenant,
		TraceID:           call.Trace.Root,
		SpanID:            call.Trace.SpanID,
		ParentSpanID:      call.Trace.Parent,
		Sampled:           call.Trace.Sampled,
		LinkedTraceparent: call.Trace.Link,
		StartedAt:         call.StartedAt.UTC(),
		Arguments:         call.Arguments,
		Dimensions:        call.Dimensions(),
		LambdaRequestID:   call.Lambda.RequestID,
		FunctionName:      call.Lambda.FunctionName,
		FunctionVersion:   call.Lambda.FunctionVersion,
		ColdStart:         call.Lambda.ColdStart,
		Destructive:       tool.destructive && call.Tool == tool.name,
	}
	if call.Trace.Root == "" {
		// No trace: no parent either; the auditor starts a new trace (the
		// one it gave the pending row, if there was one).
		row.ParentSpanID = ""
		row.TraceID = call.auditTrace
	}
	if m := call.MCP; m != nil {
		row.MCPEra, row.MCPMethod, row.ProtocolVersion = string(m.Era), m.Method, m.ProtocolVersion
		row.MCPOutcome, row.MCPRound = m.Outcome, m.Round
		if m.ClientInfo != nil {
			row.ClientName, row.ClientVersion = m.ClientInfo.Name, m.ClientInfo.Version
		}
	}
	if id := call.Caller; id != nil {
		row.CallerSubject, row.CallerAuthMethod, row.CallerClientID = id.Subject, id.AuthMethod, id.ClientID
		row.CallerIP, row.CallerUserAgent, row.CallerRoleSession = id.IP, id.UserAgent, id.RoleSession
	}
	if out == nil {
		return row
	}
	row.DurationMs = float64(out.Duration.Microseconds()) / 1000
	row.OK = out.Err == nil
	row.Stage = string(out.Stage)
	row.ResultBytes = len(out.Result)
	row.Panicked = out.Panicked
	if out.Err != nil {
		pub := out.Public
		if pub == nil {
			pub = publicError(out.Err)
		}
		row.ErrorCode, row.ErrorMessage = string(pub.Code), pub.Message
		var e *Error
		if !errors.As(out.Err, &e) || e.cause != nil {
			// The caller's copy was scrubbed or summarised: keep the
			// raw error where only the audit can see it.
			row.RawError = out.Err.Error()
		}
		if pub.Details != nil {
			if b, err := json.Marshal(pub.Details); err == nil {
				row.ErrorDetails = b
			}
		}
	}
	return row
}
