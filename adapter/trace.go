package adapter

import (
	"context"
	"time"

	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/wire"
)

// Trace is the call's place in an X-Ray trace (see [wire.Trace] for its
// fields). Read it with [Call.Trace].
type Trace = wire.Trace

// Trace returns the call's trace position. It is settled when the call is
// built, before any hook runs, and no hook can change it. A call that
// arrived without any trace context starts a trace of its own: Root is a
// fresh trace id, From is "new", Header and Parent are "".
func (c *Call) Trace() Trace { return c.trace }

// traceOf is the trace position of a call, in order of trust: the
// invocation's own X-Ray header (Lambda set it), the envelope's (where
// Lambda gave none, as under sam local), a W3C traceparent in _meta
// (SEP-414), else a new trace. It always gives the call a span id of its
// own.
func traceOf(ctx context.Context, d *decoded, started time.Time) Trace {
	var t Trace
	if h := wire.TraceHeaderFrom(ctx); h != "" {
		t = wire.ParseTraceHeader(h)
		t.From = "lambda"
	} else if d.envTrace != "" {
		// The envelope's header is payload: one that is not a well-formed
		// X-Ray header is dropped, as the gateway drops a caller's.
		if et := wire.ParseTraceHeader(d.envTrace); et.WellFormed() {
			t = et
			t.From = "envelope"
		}
	}
	if d.meta != nil {
		if tp, ok := d.meta["traceparent"].(string); ok {
			if w3c, valid := audit.ParseTraceparent(tp); valid && t.Root == "" {
				// SEP-414: where no X-Ray header exists, the caller's
				// W3C trace context is the parent (docs/tracing.md).
				t = wire.ParseTraceHeader(w3c.XRayHeader())
				t.From = "traceparent"
			} else {
				t.Link = tp
			}
		}
	}
	if t.Root == "" {
		// Minted once, here, so that every observer of the call — the
		// audit hook's pending and final rows among them — names the same
		// trace.
		t.Root, t.Parent, t.From = audit.NewTraceID(started), "", "new"
	}
	t.SpanID = audit.NewSpanID()
	return t
}
