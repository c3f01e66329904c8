package adapter

import (
	"encoding/json"
	"errors"
	"maps"
	"time"

	"github.com/mcpfn/mcpfn/audit"
)

// rowSnapshot is what a call's audit row is built from, taken when the call
// ends (docs/decisions/0039-audit-row-from-snapshot.md). Taking it is all
// the audit costs the caller's path in the after-response mode: a few
// copies, no marshalling, hashing or attribute maps; row builds the row
// from it after the answer is out, as often as asked (the row written, a
// fallback line's copy), each time the same.
//
// What a hook, or a handler that outlived its call, could still write is
// copied: the Call's exported fields, its dimensions, the Outcome. The
// verified facts and what step 1 settled (the caller, the claimed caller,
// the tenant, the trace, the received arguments and their stored object,
// the task) are read from the Call later: nothing writes them after step 1.
type rowSnapshot struct {
	call *Call
	tool *Tool

	id, toolName, session string
	source                Source
	lambda                LambdaFacts
	started               time.Time
	args                  json.RawMessage
	mcp                   MCPMeta
	hasMCP                bool
	dims                  map[string]string

	out     Outcome
	final   bool   // out is set: a final row, not a pending one
	attempt string // the pending row's attempt this final row completes
}

// snapshotOf takes call's snapshot; out is nil for a pending row.
func snapshotOf(call *Call, out *Outcome, tool *Tool, attempt string) *rowSnapshot {
	s := &rowSnapshot{
		call: call, tool: tool,
		id: call.ID, toolName: call.Tool, session: call.SessionID, source: call.Source,
		lambda: call.Lambda, started: call.StartedAt, args: call.Arguments,
		dims:    call.Dimensions(),
		attempt: attempt,
	}
	if call.MCP != nil {
		s.mcp, s.hasMCP = *call.MCP, true
	}
	if out != nil {
		s.out, s.final = *out, true
	}
	return s
}

// lateRow is the row a late outcome is added to: its key and attempt.
func (s *rowSnapshot) lateRow() *audit.Row {
	return &audit.Row{CallID: s.id, Writer: s.tool.Name(), Tool: s.toolName, AttemptID: s.attempt}
}

// row builds the call's audit row: a new one on every call.
func (s *rowSnapshot) row() *audit.Row {
	call, tool := s.call, s.tool
	trace := call.Trace()
	row := &audit.Row{
		CallID:            s.id,
		Status:            audit.StatusDone,
		AttemptID:         s.attempt,
		Tool:              s.toolName,
		Writer:            tool.Name(),
		Source:            string(s.source),
		SessionID:         s.session,
		Tenant:            call.Tenant(),
		TraceID:           trace.Root,
		SpanID:            trace.SpanID,
		ParentSpanID:      trace.Parent,
		Sampled:           trace.Sampled,
		LinkedTraceparent: trace.Link,
		StartedAt:         s.started.UTC(),
		Arguments:         s.args,
		ReceivedArgs:      call.received,
		Dimensions:        maps.Clone(s.dims), // the Auditor clamps the row's own
		LambdaRequestID:   s.lambda.RequestID,
		FunctionName:      s.lambda.FunctionName,
		FunctionVersion:   s.lambda.FunctionVersion,
		ColdStart:         s.lambda.ColdStart,
		Destructive:       tool.Destructive() && s.toolName == tool.Name(),
		TaskID:            call.TaskID(),
	}
	if m := s.mcp; s.hasMCP {
		row.MCPEra, row.MCPMethod, row.ProtocolVersion = string(m.Era), m.Method, m.ProtocolVersion
		row.MCPOutcome, row.MCPRound = m.Outcome, m.Round
		if m.ClientInfo != nil {
			row.ClientName, row.ClientVersion = m.ClientInfo.Name, m.ClientInfo.Version
		}
	}
	if id := call.caller; id != nil {
		row.CallerSubject, row.CallerAuthMethod, row.CallerClientID = id.Subject, id.AuthMethod, id.ClientID
		row.CallerIssuer = id.Issuer
		row.CallerIP, row.CallerUserAgent, row.CallerRoleSession = id.IP, id.UserAgent, id.RoleSession
	}
	if id := call.claimed; id != nil {
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
	if !s.final {
		return row
	}
	out := &s.out
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
