package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strings"
	"time"

	"github.com/mcpfn/mcpfn/adapter"
)

// Span is the gateway's X-Ray subsegment for one forwarded call: a child of
// the gateway's own trace position (the Lambda segment, or the caller's
// header when run locally) and the parent of the tool function's segment.
type Span struct {
	TraceID  string // the header's Root
	ID       string // 16 hex digits; the Parent the function receives
	ParentID string // the header's Parent
	Name     string // the function name, as X-Ray names downstream calls
	Start    time.Time
	End      time.Time

	// X-Ray's three failure flags: Throttle (429), Error (a client-side
	// failure or the function's error) and Fault (a service failure or a
	// timeout).
	Throttle, Error, Fault bool

	// Facts recorded on the subsegment.
	Tool            string
	CallID          string
	Function        string
	LambdaRequestID string
	ErrorCode       adapter.Code // the tool error the caller got, if any
}

// SpanEmitter receives the gateway's spans. Emit must not block the call for
// long: the X-Ray daemon client sends UDP datagrams.
type SpanEmitter interface {
	EmitSpan(ctx context.Context, s Span)
}

// SpanEmitterFunc adapts a function to [SpanEmitter].
type SpanEmitterFunc func(ctx context.Context, s Span)

// EmitSpan calls f.
func (f SpanEmitterFunc) EmitSpan(ctx context.Context, s Span) { f(ctx, s) }

// traceHeaderKey is the context key aws-lambda-go stores the invocation's
// X-Ray header under. It is read from the invocation's context, never from
// _X_AMZN_TRACE_ID, which concurrent invocations share on Lambda Managed
// Instances.
const traceHeaderKey = "x-amzn-trace-id"

// gatewayTrace returns the gateway's own trace position for r: the Lambda
// invocation's header when running on Lambda, else the caller's
// X-Amzn-Trace-Id header (local use). It invents nothing.
func gatewayTrace(r *http.Request) adapter.Trace {
	if h, ok := r.Context().Value(traceHeaderKey).(string); ok && h != "" {
		t := adapter.ParseTraceHeader(h)
		t.From = "lambda"
		return t
	}
	if h := r.Header.Get("X-Amzn-Trace-Id"); h != "" {
		t := adapter.ParseTraceHeader(h)
		if t.Root == "" {
			return adapter.Trace{}
		}
		t.From = "header"
		return t
	}
	return adapter.Trace{}
}

// forwardTrace decides the header sent with one forward and whether the
// gateway records a subsegment for it. A sampled (or undecided) trace gets a
// fresh subsegment id as Parent; an unsampled one is passed on unchanged, so
// the function's parent is never a segment nobody emitted. No trace → no
// header: the function then has no parent rather than an invented one.
func forwardTrace(t adapter.Trace) (header, spanID string) {
	if t.Root == "" {
		return "", ""
	}
	if t.Sampled == "0" {
		return t.Header, ""
	}
	spanID = newSpanID()
	var b strings.Builder
	b.Grow(80)
	b.WriteString("Root=")
	b.WriteString(t.Root)
	b.WriteString(";Parent=")
	b.WriteString(spanID)
	if t.Sampled != "" {
		b.WriteString(";Sampled=")
		b.WriteString(t.Sampled)
	}
	return b.String(), spanID
}

// newSpanID returns an X-Ray segment id: 64 random bits as 16 hex digits.
func newSpanID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// newCallID returns 128 random bits as 32 hex digits. The id is made once per
// tools/call and reused by every SDK retry of its Invoke, so the function's
// idempotent audit write keeps one row per call.
func newCallID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
