package wire

import (
	"context"
	"regexp"
	"strings"
)

// TraceHeaderKey is the context key aws-lambda-go stores the invocation's
// X-Ray header (Lambda-Runtime-Trace-Id) under, as a plain string. The
// _X_AMZN_TRACE_ID variable is deliberately never read: on Lambda Managed
// Instances concurrent invocations share it.
const TraceHeaderKey = "x-amzn-trace-id"

// TraceHeaderFrom returns the invocation's X-Ray header from ctx, "" when
// the runtime set none.
func TraceHeaderFrom(ctx context.Context) string {
	h, _ := ctx.Value(TraceHeaderKey).(string)
	return h
}

// Trace is a call's place in an X-Ray trace.
type Trace struct {
	// Header is the X-Ray trace header as received, "" when there was none.
	Header string
	Root   string // Root=…
	Parent string // Parent=… ("" when the header names none)
	// Sampled is "1", "0" or "" (undecided).
	Sampled string
	// From says where the header came from: "lambda" (the invocation's
	// context), "envelope" (the caller's header, where Lambda gave none),
	// "header" (an HTTP X-Amzn-Trace-Id header, at the gateway),
	// "traceparent" (a W3C traceparent, where there was no X-Ray header;
	// Header is then its X-Ray spelling) or "".
	From string
	// Link is a W3C traceparent that was not made the parent: kept as a
	// link.
	Link string
	// SpanID is this call's own span: the id of the X-Ray subsegment its
	// audit row names. Pass it downstream as the Parent of what the call
	// invokes.
	SpanID string
}

// The shapes of an X-Ray trace id and span (segment) id.
var (
	traceRootPattern = regexp.MustCompile(`^1-[0-9a-f]{8}-[0-9a-f]{24}$`)
	spanIDPattern    = regexp.MustCompile(`^[0-9a-f]{16}$`)
)

// ParseTraceHeader splits an X-Ray trace header ("Root=…;Parent=…;Sampled=1").
// It never invents a part the header lacks.
func ParseTraceHeader(h string) Trace {
	t := Trace{Header: h}
	for part := range strings.SplitSeq(h, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		switch k {
		case "Root":
			t.Root = v
		case "Parent":
			t.Parent = v
		case "Sampled":
			t.Sampled = v
		}
	}
	return t
}

// WellFormed reports whether t's Root is an X-Ray trace id and its Parent,
// if any, a span id. A header that came from a caller is caller data: one
// that is not well formed is dropped, never copied into spans and rows.
func (t Trace) WellFormed() bool {
	return traceRootPattern.MatchString(t.Root) && (t.Parent == "" || spanIDPattern.MatchString(t.Parent))
}
