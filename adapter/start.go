package adapter

import (
	"context"
	"fmt"
	"os"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"

	"github.com/mcpfn/mcpfn/calltoken"
)

// Start serves tool as this process's Lambda function and never returns.
// It is all a function's main needs:
//
//	func main() { adapter.Start(handlers.BroadcastGet(store)) }
//
// From the environment (template.yaml sets it): MCPFN_AUDIT_TABLE audits
// every call, its final row written after the answer unless
// MCPFN_AUDIT_MODE=before-response (auditenv.go); MCPFN_CALL_KEY_SECRET
// names the Secrets Manager secret this function's call tokens are verified
// with (and its multi-round request state sealed with), loaded once at cold
// start. Environment-scoped
// teardowns run on SIGTERM. A configuration that cannot be loaded stops the
// function: it never runs unaudited or unverified by accident.
func Start(tool *Tool, opts ...Option) {
	ctx := context.Background()
	aud, err := auditFromEnv(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "mcpfn: audit configuration: %v\n", err)
		os.Exit(1)
	}
	opts = append(aud.option(), opts...)
	if os.Getenv(calltoken.EnvKeySecret) != "" {
		cfg, err := awsconfig.LoadDefaultConfig(ctx)
		if err == nil {
			var v *calltoken.Verifier
			if v, err = calltoken.VerifierFromEnv(ctx, cfg); err == nil {
				opts = append([]Option{WithCallVerifier(v)}, opts...)
			}
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "mcpfn: call-token keys: %v\n", err)
			os.Exit(1)
		}
	}
	aud.serve(New(tool, append(opts, withEnvironmentTeardown())...))
}
