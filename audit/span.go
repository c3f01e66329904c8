package audit

import (
	"context"
	"errors"
	"time"
)

// Span is one X-Ray document describing a call: a subsegment of the caller's
// segment when the call carried a trace header with a parent, otherwise a
// segment of its own (the root of a trace minted for the call).
type Span struct {
	TraceID  string
	ID       string
	ParentID string // empty: a segment; set: a subsegment of that segment
	Name     string
	Start    time.Time
	End      time.Time

	// Error, Fault and Throttle are X-Ray's outcome flags (client error,
	// server error, throttled), derived from the row's error code.
	Error, Fault, Throttle bool

	Annotations map[string]any            // indexed, searchable in X-Ray
	Metadata    map[string]map[string]any // namespace → values, not indexed

	// Kind, Attributes and Link are for OpenTelemetry emitters; the X-Ray
	// document has no place for them. Attributes use the OpenTelemetry
	// semantic conventions for MCP where they exist (docs/tracing.md).
	Kind       SpanKind
	Attributes map[string]string
	// Link is a W3C traceparent the call carried but did not take as its
	// parent (it had an X-Ray parent): an OTel span link.
	Link string
}

// SpanKind is an OpenTelemetry span kind.
type SpanKind uint8

// Span kinds: a function's span serves a call, the gateway's forward is the
// client of lambda:Invoke.
const (
	SpanInternal SpanKind = iota
	SpanServer
	SpanClient
)

// SpanEmitter sends span documents to an X-Ray daemon. Emit must not block on
// the network and must be safe for concurrent use; delivery is best effort
// (UDP), which is why the audit row, not the span, is the record of a call.
type SpanEmitter interface {
	EmitSpan(Span)
}

// SpanFlusher is implemented by emitters that buffer spans (OpenTelemetry):
// FlushSpans exports everything emitted so far and returns when it is sent
// or ctx ends. Lambda freezes the process as soon as an invocation answers,
// so whoever emits a span flushes before answering ([FlushSpans]).
type SpanFlusher interface {
	FlushSpans(ctx context.Context) error
}

// FlushSpans flushes e when it buffers, within ctx; without a deadline on
// ctx, within limit (2 s when limit ≤ 0).
func FlushSpans(ctx context.Context, e SpanEmitter, limit time.Duration) error {
	f, ok := e.(SpanFlusher)
	if !ok {
		return nil
	}
	if limit <= 0 {
		limit = 2 * time.Second
	}
	if _, has := ctx.Deadline(); !has {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	return f.FlushSpans(ctx)
}

// Tee sends every span to each of its emitters (MCPFN_TRACING=both) and
// flushes those that buffer.
type Tee []SpanEmitter

// EmitSpan sends s to every emitter.
func (t Tee) EmitSpan(s Span) {
	for _, e := range t {
		e.EmitSpan(s)
	}
}

// FlushSpans flushes every emitter that buffers.
func (t Tee) FlushSpans(ctx context.Context) error {
	var errs []error
	for _, e := range t {
		if f, ok := e.(SpanFlusher); ok {
			errs = append(errs, f.FlushSpans(ctx))
		}
	}
	return errors.Join(errs...)
}

// SpanEmitterFunc adapts a function to [SpanEmitter].
type SpanEmitterFunc func(Span)

// EmitSpan calls f.
func (f SpanEmitterFunc) EmitSpan(s Span) { f(s) }

// spanFor builds the span of a final row. The row's ids are already settled
// (see Auditor.Record); the span only mirrors them, so the row and the span
// can never disagree.
func spanFor(r *Row) Span {
	name := r.Tool
	if name == "" {
		name = "unknown"
	}
	start := r.StartedAt
	end := start.Add(time.Duration(r.DurationMs * float64(time.Millisecond)))
	outcome := "ok"
	if !r.OK {
		outcome = "error"
	}
	ann := map[string]any{
		"tool":    name,
		"outcome": outcome,
		"call_id": r.CallID,
	}
	if r.ErrorCode != "" {
		ann["error_code"] = r.ErrorCode
	}
	if r.MCPEra != "" {
		ann["era"] = r.MCPEra
	}
	md := map[string]any{"source": r.Source}
	if len(r.Dimensions) > 0 {
		md["dimensions"] = r.Dimensions
	}
	if r.LambdaRequestID != "" {
		md["lambdaRequestId"] = r.LambdaRequestID
	}
	s := Span{
		Kind:        SpanServer,
		Attributes:  spanAttributes(r, name),
		Link:        r.LinkedTraceparent,
		TraceID:     r.TraceID,
		ID:          r.SpanID,
		ParentID:    r.ParentSpanID,
		Name:        xrayName(name),
		Start:       start,
		End:         end,
		Annotations: ann,
		Metadata:    map[string]map[string]any{"mcpfn": md},
	}
	if !r.OK {
		switch errorClass(r.ErrorCode) {
		case "throttle":
			s.Error, s.Throttle = true, true
		case "client":
			s.Error = true
		default:
			s.Fault = true
		}
	}
	return s
}

// spanAttributes are the OpenTelemetry attributes of a call's span: the
// semantic conventions for MCP (mcp.*, gen_ai.*, jsonrpc.*, error.type) and,
// where they name nothing, mcpfn's own (mcpfn.*).
func spanAttributes(r *Row, tool string) map[string]string {
	a := make(map[string]string, 12)
	set := func(k, v string) {
		if v != "" {
			a[k] = v
		}
	}
	method := r.MCPMethod
	if method == "" {
		method = "tools/call"
	}
	set("mcp.method.name", method)
	set("gen_ai.tool.name", tool)
	set("gen_ai.operation.name", "execute_tool")
	set("mcp.protocol.version", r.ProtocolVersion)
	set("mcp.session.id", r.SessionID)
	set("error.type", r.ErrorCode)
	set("faas.invocation_id", r.LambdaRequestID)
	set("faas.name", r.FunctionName)
	set("mcpfn.call.id", r.CallID)
	set("mcpfn.source", r.Source)
	set("mcpfn.mcp.era", r.MCPEra)
	set("mcpfn.stage", r.Stage)
	if r.OK {
		a["mcpfn.outcome"] = "ok"
	} else {
		a["mcpfn.outcome"] = "error"
	}
	return a
}

// errorClass maps the adapter's error codes (kept as strings: audit must not
// import adapter) onto X-Ray's client error / fault / throttle split.
func errorClass(code string) string {
	switch code {
	case "RATE_LIMITED":
		return "throttle"
	case "VALIDATION_ERROR", "BAD_REQUEST", "UNAUTHORIZED", "FORBIDDEN", "NOT_FOUND", "CONFLICT":
		return "client"
	}
	return "fault"
}

// xrayName keeps a segment name within X-Ray's limits (200 characters of
// letters, digits, whitespace and _ . : / % & # = + \ - @); anything else
// would make the daemon drop the whole document.
func xrayName(n string) string {
	b := make([]rune, 0, len(n))
	for _, r := range n {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == ' ',
			r == '_', r == '.', r == ':', r == '/', r == '%', r == '&', r == '#',
			r == '=', r == '+', r == '\\', r == '-', r == '@':
			b = append(b, r)
		default:
			b = append(b, '_')
		}
		if len(b) == 200 {
			break
		}
	}
	return string(b)
}

// epochSeconds is X-Ray's time format: seconds since the epoch with a
// fractional part (microsecond precision is what the service keeps).
func epochSeconds(t time.Time) float64 {
	return float64(t.UnixMicro()) / 1e6
}
