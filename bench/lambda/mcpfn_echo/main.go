// Command mcpfn_echo is the echo tool of `make bench-lambda`, written with
// mcpfn's public API only (adapter.Define and adapter.Start), so the
// benchmark measures what a user's tool function costs against the same
// echo on bare aws-lambda-go (localtest/internal/bare). Its environment
// decides the rest, as for any tool function: MCPFN_AUDIT_TABLE (audit on
// or off), MCPFN_CALL_KEY_SECRET (the key its call tokens are verified
// with); build tags choose the flavour (e.g. mcpfn_xraysdk, mcpfn_otel).
// The tag mcpfn_benchprofile adds a CPU profile of its warm calls
// (profile.go; bench-lambda's -cpuprofile).
package main

import (
	"context"

	"github.com/mcpfn/mcpfn/adapter"
)

// Tool is the echo tool's name.
const Tool = "echo"

type echo struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

func main() {
	adapter.Start(adapter.MustDefine(adapter.ToolDef[echo, echo]{
		Name:        Tool,
		Description: "Echoes its text.",
		ReadOnly:    true,
		Idempotent:  true,
		Handler: func(_ context.Context, _ *adapter.Call, in echo) (echo, error) {
			return in, nil
		},
	}), profiling()...)
}
