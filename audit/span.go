package audit

import (
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
}

// SpanEmitter sends span documents to an X-Ray daemon. Emit must not block on
// the network and must be safe for concurrent use; delivery is best effort
// (UDP), which is why the audit row, not the span, is the record of a call.
type SpanEmitter interface {
	EmitSpan(Span)
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
