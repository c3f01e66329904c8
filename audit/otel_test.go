//go:build mcpfn_otel

package audit_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/internal/otlpstandin"
	"github.com/mcpfn/mcpfn/internal/xraystandin"
)

func newReceiver(t testing.TB) *otlpstandin.Receiver {
	t.Helper()
	r, err := otlpstandin.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func newOTel(t testing.TB, r *otlpstandin.Receiver) *audit.OTelEmitter {
	t.Helper()
	em, err := audit.NewOTelEmitter(context.Background(), audit.OTelConfig{Endpoint: r.URL(), Service: "test-fn"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = em.Shutdown(context.Background()) })
	return em
}

// With MCPFN_TRACING=both a call's X-Ray document and OTLP span carry the
// row's ids, and the OTLP span has been exported when Record returns: no
// waiting, since Lambda may freeze the process right after.
func TestRecordBothEmittersSameIDsFlushed(t *testing.T) {
	e := newEnv(t)
	r := newReceiver(t)
	x, err := audit.NewXRayEmitter(e.daemon.Addr())
	if err != nil {
		t.Fatal(err)
	}
	a := e.auditor(t, audit.Config{Emitter: audit.Tee{x, newOTel(t, r)}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	parented := &audit.Row{CallID: "c-parent", Tool: "echo", Source: "envelope",
		TraceID: "1-6b0c13c0-0123456789abcdef01234567", ParentSpanID: "1111222233334444", Sampled: "1",
		MCPMethod: "tools/call", ProtocolVersion: "2025-11-25", SessionID: "sess-1",
		LinkedTraceparent: "00-aaaabbbbccccddddeeeeffff00001111-2222333344445555-01",
		OK:                false, ErrorCode: "VALIDATION_ERROR", Stage: "validate", LambdaRequestID: "req-1"}
	root := &audit.Row{CallID: "c-root", Tool: "echo", Source: "jsonrpc", OK: true}
	for _, row := range []*audit.Row{parented, root} {
		a.Record(ctx, row)
	}

	byID := map[string]otlpstandin.Span{}
	for _, s := range r.Spans() { // not WaitFor: already exported
		byID[s.SpanID] = s
	}
	for _, row := range []*audit.Row{parented, root} {
		s, ok := byID[row.SpanID]
		if !ok {
			t.Fatalf("row %s: no OTLP span %s when Record returned (have %d spans)", row.CallID, row.SpanID, len(byID))
		}
		if s.TraceID != audit.W3CTraceID(row.TraceID) || s.ParentSpanID != row.ParentSpanID {
			t.Errorf("row %s: span trace %s parent %q; row trace %s parent %q", row.CallID, s.TraceID, s.ParentSpanID, row.TraceID, row.ParentSpanID)
		}
		doc, err := e.daemon.WaitFor(ctx, func(d xraystandin.Document) bool { return d.ID == row.SpanID })
		if err != nil {
			t.Fatal(err)
		}
		if doc.TraceID != row.TraceID || doc.ParentID != row.ParentSpanID {
			t.Errorf("row %s: x-ray doc %+v", row.CallID, doc)
		}
		if s.Kind != "server" || s.Name != "tools/call echo" || s.Resource["service.name"] != "test-fn" {
			t.Errorf("span %+v", s)
		}
		if s.Attributes["mcpfn.call.id"] != row.CallID || s.Attributes["gen_ai.tool.name"] != "echo" {
			t.Errorf("attributes %v", s.Attributes)
		}
	}
	s := byID[parented.SpanID]
	want := map[string]any{"mcp.method.name": "tools/call", "mcp.protocol.version": "2025-11-25", "mcp.session.id": "sess-1",
		"error.type": "VALIDATION_ERROR", "faas.invocation_id": "req-1", "gen_ai.operation.name": "execute_tool"}
	for k, v := range want {
		if s.Attributes[k] != v {
			t.Errorf("%s = %v, want %v", k, s.Attributes[k], v)
		}
	}
	if s.Status != "error" || len(s.Links) != 1 || s.Links[0].TraceID != "aaaabbbbccccddddeeeeffff00001111" {
		t.Errorf("status %q links %v", s.Status, s.Links)
	}
	if got := byID[root.SpanID]; got.ParentSpanID != "" || got.Status != "" {
		t.Errorf("root span %+v", got)
	}
	if n, why := r.Rejected(); n != 0 {
		t.Errorf("receiver rejected %d (%s)", n, why)
	}
}

// The X-Ray ↔ W3C mapping round-trips, and the X-Ray header a traceparent
// becomes names the same trace and parent. (That the emitter reads a parent
// with this mapping is otel_xray_internal_test.go's.)
func TestTraceIDMappingRoundTrips(t *testing.T) {
	for range 50 {
		xr := audit.NewTraceID(time.Now())
		w := audit.W3CTraceID(xr)
		if audit.XRayTraceID(w) != xr {
			t.Fatalf("%s → %s → %s", xr, w, audit.XRayTraceID(w))
		}
		span := audit.NewSpanID()
		tp := audit.Traceparent{TraceID: w, ParentID: span, Sampled: true}
		if h := tp.XRayHeader(); h != "Root="+xr+";Parent="+span+";Sampled=1" {
			t.Fatalf("XRayHeader %q for %s/%s", h, xr, span)
		}
	}
}

func TestTracingFrom(t *testing.T) {
	r := newReceiver(t)
	d, err := xraystandin.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		env  func(string) string
		want string // type of the emitter, "" for none
	}{
		{"default without daemon", env(), ""},
		{"default with daemon", env(audit.EnvXRayDaemon, d.Addr()), "*audit.XRayEmitter"},
		{"xray", env(audit.EnvTracing, "xray", audit.EnvXRayDaemon, d.Addr()), "*audit.XRayEmitter"},
		{"otel", env(audit.EnvTracing, "otel", audit.EnvXRayDaemon, d.Addr(), audit.EnvOTLPEndpoint, r.URL()), "*audit.OTelEmitter"},
		{"both", env(audit.EnvTracing, "Both", audit.EnvXRayDaemon, d.Addr(), audit.EnvOTLPEndpoint, r.URL()), "audit.Tee"},
		{"none", env(audit.EnvTracing, "none", audit.EnvXRayDaemon, d.Addr()), ""},
	} {
		em, err := audit.TracingFrom(ctx, tc.env, "svc")
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got := ""
		if em != nil {
			got = typeName(em)
		}
		if got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	if _, err := audit.TracingFrom(ctx, env(audit.EnvTracing, "zipkin"), "svc"); err == nil {
		t.Error("MCPFN_TRACING=zipkin accepted")
	}
}

// A collector that does not answer costs a call at most the flush budget,
// never the invocation: Record returns before ctx's deadline. Real time:
// the collector is a real listener, which a synctest bubble cannot wait on.
func TestRecordFlushBoundedByDeadline(t *testing.T) {
	e := newEnv(t)
	// A listener that accepts and never answers.
	hang := newHangingServer(t)
	em, err := audit.NewOTelEmitter(context.Background(), audit.OTelConfig{Endpoint: hang, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_ = em.Shutdown(ctx)
	}()
	a := e.auditor(t, audit.Config{Emitter: em, Reserve: 200 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	dl, _ := ctx.Deadline()
	a.Record(ctx, &audit.Row{CallID: "c-hang", Tool: "echo", OK: true})
	if time.Now().After(dl) {
		t.Fatalf("Record returned %v after the deadline", time.Since(dl))
	}
	if got := e.item(t, "c-hang"); got == nil {
		t.Fatal("row not written")
	}
}

func typeName(v any) string { return fmt.Sprintf("%T", v) }

// newHangingServer returns the URL of a server that reads requests and
// never answers until the test ends.
func newHangingServer(t testing.TB) string {
	t.Helper()
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-done:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(done); srv.Close() })
	return srv.URL
}
