package adapter

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
)

// Start serves tool as this process's Lambda function and never returns.
// It is all a function's main needs:
//
//	func main() { adapter.Start(handlers.BroadcastGet(store)) }
//
// When MCPFN_AUDIT_TABLE is set (template.yaml sets it) every call is
// audited; environment-scoped teardowns run on SIGTERM.
func Start(tool *Tool, opts ...Option) {
	ctx := context.Background()
	auditor, err := auditorFromEnv(ctx)
	if err != nil {
		// A misconfigured audit must stop the function, not run it unaudited.
		fmt.Fprintf(os.Stderr, "mcpfn: audit configuration: %v\n", err)
		os.Exit(1)
	}
	if auditor != nil {
		opts = append([]Option{WithAuditor(auditor)}, opts...)
	}
	if key := os.Getenv(EnvRequestStateKey); key != "" {
		opts = append([]Option{WithRequestStateKey([]byte(key))}, opts...)
	}
	fn := New(tool, append(opts, withEnvironmentTeardown())...)
	lambda.StartWithOptions(fn, lambda.WithEnableSIGTERM(fn.Shutdown))
}
