package adapter

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/mcpfn/mcpfn/audit"
)

// EnvAuditMode says when a call's final audit row is written:
// "after-response" (the default on Lambda) or "before-response".
const EnvAuditMode = "MCPFN_AUDIT_MODE"

// Audit modes of MCPFN_AUDIT_MODE (docs/decisions/0023-audit-after-response.md,
// 0039-audit-row-from-snapshot.md).
const (
	// AuditAfterResponse answers the caller first and writes the final row
	// after the runtime has posted the answer, before it asks for the next
	// invocation: the invocation stays open until then.
	AuditAfterResponse = "after-response"
	// AuditBeforeResponse writes the final row before the answer.
	AuditBeforeResponse = "before-response"
)

// auditMargin is how long before the invocation's deadline the runtime
// stops waiting for rows and prints what is left as fallback lines. It is
// below the Auditor's reserve (100 ms), so a row's own retries have already
// ended in a fallback line by then, unless the process is starved.
const auditMargin = 50 * time.Millisecond

// shutdownDrain bounds the wait for queued rows (late outcomes) on SIGTERM:
// Lambda gives a runtime with internal extensions 500 ms before SIGKILL.
const shutdownDrain = 300 * time.Millisecond

// keptWriterIdle is how long the after-response audit's writer goroutine
// waits for the next invocation's row before it ends (audit.Queue.KeepWriters):
// longer than the gaps of a warm environment's steady traffic.
const keptWriterIdle = time.Minute

// environmentAudit is the audit the environment configures: no auditor,
// an auditor written before the response, or a queue of rows written after
// it.
type environmentAudit struct {
	auditor *audit.Auditor
	queue   *audit.Queue // after-response only
}

// auditFromEnv returns the audit the environment configures
// (MCPFN_AUDIT_TABLE and MCPFN_AUDIT_MODE, set by template.yaml). Whatever
// stands in the way of the after-response mode (not on Lambda, several
// invokes per environment) is logged once and the rows are written before
// the response: never unaudited.
func auditFromEnv(ctx context.Context, awsConfig func() (aws.Config, error)) (environmentAudit, error) {
	a, err := audit.NewFromEnvWith(ctx, awsConfig)
	if err != nil || a == nil {
		return environmentAudit{}, err
	}
	env := environmentAudit{auditor: a}
	mode := strings.TrimSpace(os.Getenv(EnvAuditMode))
	switch mode {
	case AuditBeforeResponse:
		return env, nil
	case "", AuditAfterResponse:
	default:
		return env, fmt.Errorf("%s=%q: want %s or %s", EnvAuditMode, mode, AuditAfterResponse, AuditBeforeResponse)
	}
	var why string
	switch {
	case os.Getenv("AWS_LAMBDA_RUNTIME_API") == "":
		if mode == "" {
			return env, nil // not on Lambda (a test, a tool run by hand)
		}
		why = "not on Lambda (AWS_LAMBDA_RUNTIME_API is unset)"
	case lambdacontext.MaxConcurrency() > 1:
		// Each of the runtime's loops would hold only its own invocation;
		// that is not verified yet, so the rows go before the answer.
		why = fmt.Sprintf("%d concurrent invokes per environment", lambdacontext.MaxConcurrency())
	default:
		env.queue = audit.NewQueue(a).KeepWriters(keptWriterIdle)
		return env, nil
	}
	fmt.Fprintf(os.Stderr, "mcpfn: audit rows are written before the response: %s\n", why)
	return env, nil
}

// option is the audit's place among the function's options (first, so its
// AfterToolCall runs last).
func (e environmentAudit) option() []Option {
	switch {
	case e.queue != nil:
		return []Option{WithAuditQueue(e.queue), withRowsWrittenBeforeNext(e.queue)}
	case e.auditor != nil:
		return []Option{WithAuditor(e.auditor)}
	}
	return nil
}

// serve runs fn as this process's Lambda function with rt. In
// after-response mode the runtime itself holds each invocation open until
// its rows are settled: aws-lambda-go closes the answer once it has posted
// it and asks for the next invocation only then, and the answer's Close
// writes the rows (invoke.go). SIGTERM drains what is still queued and
// runs the environment teardowns (runtime.go).
func (e environmentAudit) serve(fn *Function, rt *runtimeHandler) {
	shutdown := fn.Shutdown
	if e.queue != nil {
		shutdown = func() {
			ctx, cancel := context.WithTimeout(context.Background(), shutdownDrain)
			defer cancel()
			_ = e.queue.Drain(ctx)
			fn.Shutdown()
		}
	}
	rt.serve(fn, shutdown)
}
