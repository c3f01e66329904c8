//go:build mcpfn_otel

package gateway

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/internal/otlpstandin"
)

// A client's W3C traceparent (HTTP header, or _meta.traceparent per
// SEP-414) is the root of the chain where the caller sent no X-Ray header:
// the gateway's forward span is its child and the function's parent, with
// the same ids in X-Ray and OTLP. With an X-Ray header it is a link.
func TestClientTraceparentIsTheParent(t *testing.T) {
	rcv, err := otlpstandin.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Close()
	ot, err := audit.NewOTelEmitter(context.Background(), audit.OTelConfig{Endpoint: rcv.URL(), Service: "gw"})
	if err != nil {
		t.Fatal(err)
	}
	defer ot.Shutdown(context.Background())
	log := &spanLog{}
	e := newEnv(t, func(c *Config) { c.Auth = AuthNone; c.Spans = audit.Tee{log, ot} })
	e.spans = log

	const (
		clientTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
		clientSpan  = "00f067aa0ba902b7"
		tp          = "00-" + clientTrace + "-" + clientSpan + "-01"
		xrayRoot    = "1-4bf92f35-77b34da6a3ce929d0e0e4736"
	)
	call := func(h http.Header, meta map[string]any) (facts, audit.Span, otlpstandin.Span) {
		t.Helper()
		cs := e.mustConnect(t, "c", "", h)
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo_call", Arguments: map[string]any{"entityId": "tp"}, Meta: meta})
		if err != nil {
			t.Fatal(err)
		}
		f := factsFrom(t, res)
		sp, ok := log.byCall(f.CallID)
		if !ok {
			t.Fatalf("no gateway span for %s", f.CallID)
		}
		var os otlpstandin.Span
		for _, s := range rcv.Spans() { // flushed before the answer
			if s.SpanID == sp.ID {
				os = s
			}
		}
		if os.SpanID == "" {
			t.Fatalf("gateway span %s not exported when the call returned", sp.ID)
		}
		if os.TraceID != audit.W3CTraceID(sp.TraceID) || os.ParentSpanID != sp.ParentID || os.Kind != "client" ||
			os.Attributes["gen_ai.tool.name"] != "echo_call" || os.Attributes["mcpfn.call.id"] != f.CallID || os.Name != "tools/call echo_call" {
			t.Errorf("otlp span %+v for x-ray span %+v", os, sp)
		}
		return f, sp, os
	}
	for name, how := range map[string]struct {
		h    http.Header
		meta map[string]any
	}{
		"header": {http.Header{"Traceparent": {tp}}, nil},
		"_meta":  {http.Header{}, map[string]any{"traceparent": tp}},
	} {
		f, sp, _ := call(how.h, how.meta)
		if sp.TraceID != xrayRoot || sp.ParentID != clientSpan {
			t.Errorf("%s: gateway span trace %s parent %s; want the client's %s/%s", name, sp.TraceID, sp.ParentID, xrayRoot, clientSpan)
		}
		if f.TraceRoot != xrayRoot || f.TraceParent != sp.ID {
			t.Errorf("%s: function trace %s parent %s; want %s under the gateway span %s", name, f.TraceRoot, f.TraceParent, xrayRoot, sp.ID)
		}
	}

	// The caller's own X-Ray header wins; the traceparent is a link.
	root := newTraceRoot()
	_, sp, os := call(http.Header{"X-Amzn-Trace-Id": {"Root=" + root + ";Parent=53995c3f42cd8ad8;Sampled=1"}}, map[string]any{"traceparent": tp})
	if sp.TraceID != root || sp.ParentID != "53995c3f42cd8ad8" || sp.Link != tp {
		t.Errorf("x-ray + traceparent: span %+v", sp)
	}
	if len(os.Links) != 1 || os.Links[0].TraceID != clientTrace || os.Links[0].SpanID != clientSpan {
		t.Errorf("otlp links %+v", os.Links)
	}

	// An unsampled traceparent is passed on and nothing is emitted.
	cs := e.mustConnect(t, "c", "", http.Header{"Traceparent": {"00-" + clientTrace + "-" + clientSpan + "-00"}})
	f := factsFrom(t, callTool(t, cs, "echo_call", map[string]any{"entityId": "u"}))
	if _, ok := log.byCall(f.CallID); ok || f.TraceRoot != xrayRoot || f.TraceParent != clientSpan {
		t.Errorf("unsampled: emitted %v, function trace %s/%s", ok, f.TraceRoot, f.TraceParent)
	}
}

// MCPFN_TRACING reaches the gateway's configuration; its rows and its
// forwards share one emitter (one OTLP exporter).
func TestConfigFromTracing(t *testing.T) {
	env := map[string]string{
		EnvToolFunctions: "echo_call=fn-echo", EnvAuthMode: "none",
		audit.EnvTracing: "both", audit.EnvXRayDaemon: "127.0.0.1:2000", audit.EnvOTLPEndpoint: "http://127.0.0.1:4318",
	}
	cfg, err := ConfigFrom(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if tee, ok := cfg.Spans.(audit.Tee); !ok || len(tee) != 2 {
		t.Fatalf("spans %T %v, want X-Ray and OTel", cfg.Spans, cfg.Spans)
	}
	env[audit.EnvTable] = "AuditTable"
	env["AWS_REGION"] = "us-east-1"
	if cfg, err = ConfigFrom(func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	a, ok := cfg.Recorder.(*audit.Auditor)
	if !ok || fmt.Sprint(a.Emitter()) != fmt.Sprint(cfg.Spans) {
		t.Errorf("rows' emitter %v, forwards' %v: want one", a.Emitter(), cfg.Spans)
	}
	env[audit.EnvTracing] = "jaeger"
	if _, err := ConfigFrom(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), audit.EnvTracing) {
		t.Errorf("MCPFN_TRACING=jaeger: %v", err)
	}
}
