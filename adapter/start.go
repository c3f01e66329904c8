package adapter

import (
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"

	"github.com/mcpfn/mcpfn/calltoken"
)

// Start serves tool as this process's Lambda function and never returns.
// It is all a function's main needs:
//
//	func main() { adapter.Start(handlers.Hello) }
//
// or, for a tool declared with [Declare] whose handler needs a dependency,
//
//	func main() { adapter.Serve(handlers.NoteAdd, handlers.NotesFromEnv) }
//
// From the environment (template.yaml sets it): MCPFN_AUDIT_TABLE audits
// every call, its final row written after the answer unless
// MCPFN_AUDIT_MODE=before-response (auditenv.go); MCPFN_CALL_KEY_SECRET
// names the Secrets Manager secret this function's call tokens are verified
// with (and its multi-round request state sealed with), loaded once at cold
// start. Environment-scoped teardowns run on SIGTERM. MCPFN_TASKS_TABLE
// gives it the tasks table it runs tasks and watches cancels with
// (docs/long-running.md). MCPFN_PAYLOADS_BUCKET is where results too large
// to answer go, and where the gateway stores arguments too large to send
// (the claim check: [WithPayloads]). Answers are streamed when the envelope asks for
// it ([Function.InvokeStream]). A configuration that cannot be loaded stops
// the function: it never runs unaudited or unverified by accident.
//
// With MCPFN_DESCRIBE=1 outside Lambda it prints the tool's declaration
// instead and exits ([EnvDescribe]).
func Start(tool *Tool, opts ...Option) {
	if describing() {
		describe(tool)
	}
	beginBoot().finish(tool, opts...)
}

// boot is a cold start under way. Its waits on the network begin first —
// the call keys' Secrets Manager fetch, and the SIGTERM extension's
// registration with the Extensions API — so that the rest of the start (a
// declared tool's dependency, the audit's clients) overlaps them.
type boot struct {
	ctx          context.Context
	awsConfig    func() (aws.Config, error)
	callVerifier func() (*calltoken.Verifier, error)
	rt           *runtimeHandler
}

// beginBoot starts the waits. One AWS configuration serves every client.
func beginBoot() *boot {
	ctx := context.Background()
	b := &boot{ctx: ctx, rt: startRuntime()}
	b.awsConfig = sync.OnceValues(func() (aws.Config, error) { return awsconfig.LoadDefaultConfig(ctx) })
	b.callVerifier = calltoken.StartVerifierFromEnv(ctx, b.awsConfig)
	return b
}

// finish builds the rest and serves tool; it never returns.
func (b *boot) finish(tool *Tool, opts ...Option) {
	ctx, awsConfig := b.ctx, b.awsConfig
	aud, err := auditFromEnv(ctx, awsConfig)
	if err != nil {
		fmt.Fprintf(os.Stderr, "mcpfn: audit configuration: %v\n", err)
		os.Exit(1)
	}
	opts = append(aud.option(), opts...)
	if v, err := b.callVerifier(); err != nil {
		fmt.Fprintf(os.Stderr, "mcpfn: call-token keys: %v\n", err)
		os.Exit(1)
	} else if v != nil {
		opts = append([]Option{WithCallVerifier(v)}, opts...)
	}
	taskOpts, err := taskOptionsFromEnv(ctx, os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "mcpfn: tasks configuration: %v\n", err)
		os.Exit(1)
	}
	payloadOpts, err := payloadOptionsFromEnv(awsConfig, os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "mcpfn: payloads bucket configuration: %v\n", err)
		os.Exit(1)
	}
	// The environment's bucket and Lambda's answer limit first: an
	// option given to Start wins.
	payloadOpts = append(payloadOpts, WithLimits(Limits{MaxAnswerBytes: lambdaAnswerBytes}))
	opts = append(append(payloadOpts, opts...), taskOpts...)
	aud.serve(New(tool, append(opts, withEnvironmentTeardown())...), b.rt)
}
