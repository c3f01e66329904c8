//go:build !mcpfn_otel

package audit_test

import (
	"context"
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/audit"
)

// A build without OpenTelemetry refuses MCPFN_TRACING=otel (and both) at
// start, naming the tag that links it, instead of running without the
// spans it was asked for.
func TestTracingOTelNeedsTheTag(t *testing.T) {
	for _, mode := range []string{audit.TracingOTel, audit.TracingBoth} {
		getenv := func(k string) string {
			return map[string]string{audit.EnvTracing: mode, audit.EnvOTLPEndpoint: "http://127.0.0.1:4318"}[k]
		}
		em, err := audit.TracingFrom(context.Background(), getenv, "svc")
		if err == nil || !strings.Contains(err.Error(), "mcpfn_otel") {
			t.Errorf("MCPFN_TRACING=%s: %v, %v; want an error naming the tag mcpfn_otel", mode, em, err)
		}
	}
}
