package gateway

import (
	"net/http"
	"strings"

	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/wire"
)

// gatewayTrace returns the gateway's own trace position for r: the Lambda
// invocation's header when running on Lambda, else the caller's
// X-Amzn-Trace-Id header (local use). It invents nothing.
func gatewayTrace(r *http.Request) wire.Trace {
	// From the invocation's context (wire.TraceHeaderKey), never from
	// _X_AMZN_TRACE_ID, which concurrent invocations share on Lambda
	// Managed Instances.
	if h := wire.TraceHeaderFrom(r.Context()); h != "" {
		t := wire.ParseTraceHeader(h)
		t.From = "lambda"
		return t
	}
	if h := r.Header.Get("X-Amzn-Trace-Id"); h != "" {
		t := wire.ParseTraceHeader(h)
		// A caller's header is caller data: one that is not a well-formed
		// X-Ray header is dropped rather than copied into spans and rows.
		if !t.WellFormed() {
			return wire.Trace{}
		}
		t.From = "header"
		return t
	}
	return wire.Trace{}
}

// callerTraced reports whether the caller sent a well-formed X-Ray header
// of its own (one gatewayTrace would accept).
func callerTraced(r *http.Request) bool {
	h := r.Header.Get("X-Amzn-Trace-Id")
	if h == "" {
		return false
	}
	return wire.ParseTraceHeader(h).WellFormed()
}

// callTrace is the trace position of one forwarded call. A caller's own
// X-Ray context (an X-Amzn-Trace-Id header it sent) wins; otherwise a W3C
// traceparent — the call's _meta.traceparent (SEP-414), else the HTTP
// traceparent header — is the parent, in X-Ray spelling (same ids, see
// docs/tracing.md), ahead of a trace Lambda started for the request;
// otherwise the gateway's own position. A traceparent that is not the
// parent is returned as link.
func callTrace(ri *requestInfo, meta map[string]any) (t wire.Trace, link string) {
	tp, _ := meta["traceparent"].(string)
	if tp == "" {
		tp = ri.traceparent
	}
	w3c, ok := audit.ParseTraceparent(tp)
	if !ok || ri.callerXRay {
		return ri.trace, tp
	}
	t = wire.ParseTraceHeader(w3c.XRayHeader())
	t.From = "traceparent"
	return t, ""
}

// forwardTrace decides the header sent with one forward and whether the
// gateway records a subsegment for it. A sampled (or undecided) trace gets a
// fresh subsegment id as Parent; an unsampled one is passed on unchanged, so
// the function's parent is never a segment nobody emitted. No trace → no
// header: the function then has no parent rather than an invented one.
func forwardTrace(t wire.Trace) (header, spanID string) {
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
