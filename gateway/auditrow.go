package gateway

import (
	"context"
	"encoding/json"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/wire"
)

// delivery is what the gateway knows of whether the function saw a call.
// It decides whether the gateway writes a row of its own, and what that row
// says; the function's own rows are the function's business (ADR 0015).
type delivery int

const (
	// answered: the function answered (its adapter wrote the call's row),
	// or the call never failed. The gateway writes no row.
	answered delivery = iota
	// notSent: the gateway refused the call or Lambda refused it before
	// running anything (throttle, not found, denied, no slot, no time). The
	// gateway's row is the call's only row, and its outcome.
	notSent
	// maybeRun: the request reached Lambda, but no answer came back (5xx,
	// reset, timeout, crash, a stream cut off). The gateway's row says so
	// (outcome "unknown"); the function's own final row, if it ran and
	// wrote one — even after the gateway gave up — is the call's outcome.
	maybeRun
)

// StageGateway is the audit row stage of a call that failed at the gateway.
const StageGateway = "gateway"

// recordUnseen writes the gateway's row of a call the function did not
// answer, so that every call has a row: the same call id as the function's
// rows, under the gateway's own key ("gateway#<callId>", audit.GatewayWriter),
// which only the gateway's role may write and no function row can take. The
// two writers never compete for a key: the row is always final (a put no
// function row can refuse), and readers join the rows by call id, the
// function's final row being the call's outcome when there is one
// (audit.Call).
func (g *Gateway) recordUnseen(ctx context.Context, ri *requestInfo, env *wire.Envelope, f *forward, spanID string, destructive bool) {
	row := &audit.Row{
		CallID:          env.CallID,
		Writer:          audit.GatewayWriter,
		Tool:            env.Params.Name,
		Source:          string(adapter.SourceEnvelope),
		MCPEra:          string(env.MCP.Era),
		MCPMethod:       env.MCP.Method,
		ProtocolVersion: env.MCP.ProtocolVersion,
		SessionID:       env.SessionID,
		StartedAt:       f.start.UTC(),
		DurationMs:      float64(f.end.Sub(f.start).Microseconds()) / 1000,
		Stage:           StageGateway,
		ErrorCode:       string(f.code),
		Arguments:       env.Params.Arguments,
		ReceivedArgs:    env.Params.Arguments,
		LambdaRequestID: f.requestID,
		FunctionName:    f.function,
		Destructive:     destructive,
	}
	if f.args != nil {
		// The arguments as the client sent them, when the envelope holds
		// only their reference (claimcheck.go).
		row.Arguments, row.ReceivedArgs = f.args, f.args
	}
	if row.ReceivedArgs == nil && env.Params.ArgumentsRef == nil {
		row.ReceivedArgs = json.RawMessage{} // absent: digested as {}
	}
	for _, ref := range []*wire.ObjectRef{f.argsRef, env.Params.ArgumentsRef} {
		if ref != nil {
			row.ArgsBytes, row.ArgsSHA256 = ref.Size, ref.SHA256
			row.ArgsObject = &audit.Object{Bucket: ref.Bucket, Key: ref.Key, VersionID: ref.VersionID}
			break
		}
	}
	if ref := f.resultRef; ref != nil {
		// The stored result the function answered with and the gateway
		// could not serve (f.undelivered).
		row.ResultBytes, row.ResultSHA256 = int(ref.Size), ref.SHA256
		row.ResultObject = &audit.Object{Bucket: ref.Bucket, Key: ref.Key, VersionID: ref.VersionID}
	}
	if env.Task != nil {
		row.TaskID = env.Task.ID
	}
	if ci := env.MCP.ClientInfo; ci != nil {
		row.ClientName, row.ClientVersion = ci.Name, ci.Version
	}
	if id := ri.identity; id != nil {
		row.CallerSubject, row.CallerAuthMethod, row.CallerClientID = id.Subject, id.AuthMethod, id.ClientID
		row.CallerIssuer = id.Issuer
		row.CallerIP, row.CallerUserAgent, row.Tenant = id.IP, id.UserAgent, id.Tenant
		row.CallerRoleSession = id.RoleSession
	}
	if t := ri.trace; t.Root != "" {
		// The row's span sits where the function's would have: under the
		// gateway's forward subsegment (or the gateway's parent when the
		// trace is unsampled and no subsegment was made).
		row.TraceID, row.Sampled, row.ParentSpanID = t.Root, t.Sampled, t.Parent
		if spanID != "" {
			row.ParentSpanID = spanID
		}
	}
	if e := f.public; e != nil {
		row.ErrorMessage = e.Message
		if b, err := json.Marshal(e.Details); err == nil && e.Details != nil {
			row.ErrorDetails = b
		}
	}
	if f.cause != nil {
		// The caller's copy names neither function nor account; the audit
		// keeps the why, as the adapter does for scrubbed errors.
		row.RawError = f.cause.Error()
	}

	// The write belongs to the gateway's invocation, not to the caller's
	// connection: it survives a disconnect but not the invocation. A
	// long-lived gateway (no invocation deadline) leaves the bounds to the
	// Auditor, whose Budget starts when the row's write does: a row queued
	// behind a burst of others (at most MaxInFlight writes at once) gets
	// the same time as the first. A timeout of the gateway's own here
	// (it was 5 s) would count the wait in the queue too (issue 21).
	wctx := context.WithoutCancel(ctx)
	if !ri.deadline.IsZero() {
		var cancel context.CancelFunc
		wctx, cancel = context.WithDeadline(wctx, ri.deadline)
		defer cancel()
	}
	if f.delivery == maybeRun {
		// What the gateway knows: it told the caller f.code, and the
		// function may have run. Not "pending": nothing will complete
		// this row; the function's own row is where its run is told.
		row.Outcome = audit.OutcomeUnknown
	}
	g.cfg.Recorder.Record(wctx, row)
}
