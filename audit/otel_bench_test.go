//go:build mcpfn_otel

package audit_test

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/audit"
)

// emitterEnv is a benchmark's audit table and its two span emitters: X-Ray
// (to the env's daemon stand-in) and OTel (to an OTLP stand-in).
func emitterEnv(b *testing.B) (*env, audit.SpanEmitter, audit.SpanEmitter) {
	e := newEnv(b)
	x, err := audit.NewXRayEmitter(e.daemon.Addr())
	if err != nil {
		b.Fatal(err)
	}
	return e, x, newOTel(b, newReceiver(b))
}

// BenchmarkRecordTracing is BenchmarkRecord with each MCPFN_TRACING mode's
// emitter: none (tracing off: no span is built), xray (a UDP datagram),
// otel (a span batched and flushed over OTLP/HTTP to the stand-in on
// loopback before Record returns), both.
//
//	go test -run '^$' -bench 'RecordTracing|EmitSpan' -benchmem -count 6 ./audit/
func BenchmarkRecordTracing(b *testing.B) {
	e, x, o := emitterEnv(b)
	for _, mode := range []struct {
		name string
		em   audit.SpanEmitter
	}{{"none", nil}, {"xray", x}, {"otel", o}, {"both", audit.Tee{x, o}}} {
		b.Run(mode.name, func(b *testing.B) {
			a := audit.New(audit.Config{Table: e.table, Client: e.client, Fallback: io.Discard, Emitter: mode.em})
			ctx := context.Background()
			warm(a)
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				i++
				row := baseRow(fmt.Sprintf("bench-%s-%d", mode.name, i))
				row.Arguments = typicalArgs
				a.Record(ctx, row)
			}
		})
	}
}

// BenchmarkEmitSpan is the span alone: build, emit and (for OTel) flush one
// call's span, without the row's write.
func BenchmarkEmitSpan(b *testing.B) {
	_, x, o := emitterEnv(b)
	for _, mode := range []struct {
		name string
		em   audit.SpanEmitter
	}{{"xray", x}, {"otel", o}} {
		b.Run(mode.name, func(b *testing.B) {
			s := audit.Span{TraceID: audit.NewTraceID(time.Now()), ParentID: audit.NewSpanID(), Name: "echo",
				Start: time.Now(), End: time.Now(), Kind: audit.SpanServer,
				Annotations: map[string]any{"tool": "echo"},
				Attributes:  map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "echo", "mcpfn.call.id": "c"}}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				s.ID = audit.NewSpanID()
				mode.em.EmitSpan(s)
				_ = audit.FlushSpans(ctx, mode.em, 0)
			}
		})
	}
}
