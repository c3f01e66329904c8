package gateway

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"regexp"
	"strings"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
)

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
		// A caller's header is caller data: one that is not a well-formed
		// X-Ray header is dropped rather than copied into spans and rows.
		if !traceRoot.MatchString(t.Root) || (t.Parent != "" && !spanIDPattern.MatchString(t.Parent)) {
			return adapter.Trace{}
		}
		t.From = "header"
		return t
	}
	return adapter.Trace{}
}

// callerTraced reports whether the caller sent a well-formed X-Ray header
// of its own (one gatewayTrace would accept).
func callerTraced(r *http.Request) bool {
	h := r.Header.Get("X-Amzn-Trace-Id")
	if h == "" {
		return false
	}
	t := adapter.ParseTraceHeader(h)
	return traceRoot.MatchString(t.Root) && (t.Parent == "" || spanIDPattern.MatchString(t.Parent))
}

// callTrace is the trace position of one forwarded call. A caller's own
// X-Ray context (an X-Amzn-Trace-Id header it sent) wins; otherwise a W3C
// traceparent — the call's _meta.traceparent (SEP-414), else the HTTP
// traceparent header — is the parent, in X-Ray spelling (same ids, see
// docs/tracing.md), ahead of a trace Lambda started for the request;
// otherwise the gateway's own position. A traceparent that is not the
// parent is returned as link.
func callTrace(ri *requestInfo, meta map[string]any) (t adapter.Trace, link string) {
	tp, _ := meta["traceparent"].(string)
	if tp == "" {
		tp = ri.traceparent
	}
	w3c, ok := audit.ParseTraceparent(tp)
	if !ok || ri.callerXRay {
		return ri.trace, tp
	}
	t = adapter.ParseTraceHeader(w3c.XRayHeader())
	t.From = "traceparent"
	return t, ""
}

var (
	traceRoot     = regexp.MustCompile(`^1-[0-9a-f]{8}-[0-9a-f]{24}$`)
	spanIDPattern = regexp.MustCompile(`^[0-9a-f]{16}$`)
)

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
	spanID = audit.NewSpanID()
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

// newCallID returns 128 random bits as 32 hex digits. The id is made once per
// tools/call and reused by every SDK retry of its Invoke, so the function's
// idempotent audit write keeps one row per call.
func newCallID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
