package adapter

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
)

// TestEnvironmentTeardownPanicIsLogged: a panicking environment-scoped
// cleanup is logged, as a call-scoped one is, and the others still run.
func TestEnvironmentTeardownPanicIsLogged(t *testing.T) {
	tool, err := Define(ToolDef[struct{}, struct{}]{Name: "t", Handler: func(context.Context, *Call, struct{}) (struct{}, error) { return struct{}{}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	f := New(tool, withEnvironmentTeardown(), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	ran := false
	f.envTD.add(func() { ran = true })
	f.envTD.add(func() { panic("boom") })
	f.Shutdown()
	if !ran {
		t.Fatal("a panicking cleanup stopped the others")
	}
	if !strings.Contains(logs.String(), "environment teardown panicked: boom") {
		t.Fatalf("the panic was not logged: %q", logs.String())
	}
}
