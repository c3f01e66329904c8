//go:build mcpfn_otel

package audit

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/mcpfn/mcpfn/wire"
)

// The OpenTelemetry emitter speaks X-Ray's ids in OpenTelemetry's types: the
// ids of spans mcpfn did not settle come from xrayIDs, so that X-Ray accepts
// every trace the emitter exports, and a span's parent is read from its
// X-Ray header by spanContextFromXRay. Both are a few lines over wire's
// header parser and the mapping in w3c.go; they replace the deprecated
// opentelemetry-go-contrib propagator (docs/decisions/0026).

// xrayIDs is the SDK's id generator for X-Ray: a trace id's first 4 bytes
// are its start in epoch seconds, as X-Ray requires (it rejects a trace
// whose time part is far from its segments' time), the other 12 random.
type xrayIDs struct {
	now func() time.Time // nil: time.Now
}

// NewIDs returns a new trace id and the id of its root span.
func (g xrayIDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	now := time.Now
	if g.now != nil {
		now = g.now
	}
	var tid trace.TraceID
	binary.BigEndian.PutUint32(tid[:4], uint32(now().Unix()))
	_, _ = rand.Read(tid[4:]) // crypto/rand.Read never fails on supported platforms
	return tid, g.NewSpanID(ctx, tid)
}

// NewSpanID returns a random span id, never the all-zero (invalid) one.
func (xrayIDs) NewSpanID(context.Context, trace.TraceID) trace.SpanID {
	var sid trace.SpanID
	for !sid.IsValid() {
		_, _ = rand.Read(sid[:])
	}
	return sid
}

// spanContextFromXRay reads an X-Ray trace header ("Root=…;Parent=…;
// Sampled=1") as the remote span context it names: the trace in W3C form,
// the parent as the span, sampled only for Sampled=1. ok is false, and the
// span context invalid, when the header names no parent or is not well
// formed (wire.Trace.WellFormed): a caller's malformed header names nobody.
func spanContextFromXRay(header string) (sc trace.SpanContext, ok bool) {
	tr := wire.ParseTraceHeader(header)
	if tr.Parent == "" || !tr.WellFormed() {
		return trace.SpanContext{}, false
	}
	tid, err := trace.TraceIDFromHex(W3CTraceID(tr.Root))
	if err != nil {
		return trace.SpanContext{}, false
	}
	sid, err := trace.SpanIDFromHex(tr.Parent)
	if err != nil {
		return trace.SpanContext{}, false
	}
	var flags trace.TraceFlags
	if tr.Sampled == "1" {
		flags = trace.FlagsSampled
	}
	sc = trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags, Remote: true})
	return sc, sc.IsValid()
}
