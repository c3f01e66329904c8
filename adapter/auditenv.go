package adapter

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/mcpfn/mcpfn/adapter/internal/lambdaext"
	"github.com/mcpfn/mcpfn/audit"
)

// EnvAuditMode says when a call's final audit row is written:
// "after-response" (the default on Lambda) or "before-response".
const EnvAuditMode = "MCPFN_AUDIT_MODE"

// Audit modes of MCPFN_AUDIT_MODE (docs/decisions/0023-audit-after-response.md).
const (
	// AuditAfterResponse answers the caller first and writes the final row
	// while the function's internal extension holds the invocation open.
	AuditAfterResponse = "after-response"
	// AuditBeforeResponse writes the final row before the answer.
	AuditBeforeResponse = "before-response"
)

// auditExtensionName is the internal extension that holds each invocation
// open until its rows are written.
const auditExtensionName = "mcpfn-audit"

// auditMargin is how long before the invocation's deadline the extension
// stops waiting for rows and prints what is left as fallback lines. It is
// below the Auditor's reserve (100 ms), so a row's own retries have already
// ended in a fallback line by then, unless the process is starved.
const auditMargin = 50 * time.Millisecond

// shutdownDrain bounds the wait for queued rows on SIGTERM: Lambda gives a
// runtime with internal extensions 500 ms before SIGKILL.
const shutdownDrain = 300 * time.Millisecond

// environmentAudit is the audit the environment configures: no auditor,
// an auditor written before the response, or one written after it through
// the registered extension.
type environmentAudit struct {
	auditor *audit.Auditor
	queue   *audit.Queue         // after-response only
	ext     *lambdaext.Extension // after-response only
}

// auditFromEnv returns the audit the environment configures
// (MCPFN_AUDIT_TABLE and MCPFN_AUDIT_MODE, set by template.yaml). In
// after-response mode it registers the internal extension, which must
// happen before the runtime asks for its first invocation: on Lambda,
// registration closes then. Whatever stands in the way of the
// after-response mode (not on Lambda, several invokes per environment, the
// registration refused) is logged once and the rows are written before the
// response: never unaudited.
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
	api := os.Getenv("AWS_LAMBDA_RUNTIME_API")
	var why string
	switch {
	case api == "":
		if mode == "" {
			return env, nil // not on Lambda (a test, a tool run by hand)
		}
		why = "not on Lambda (AWS_LAMBDA_RUNTIME_API is unset)"
	case lambdacontext.MaxConcurrency() > 1:
		why = fmt.Sprintf("%d concurrent invokes per environment", lambdacontext.MaxConcurrency())
	default:
		ext, err := lambdaext.Register(ctx, api, auditExtensionName, "INVOKE")
		if err == nil {
			env.queue, env.ext = audit.NewQueue(a), ext
			return env, nil
		}
		why = err.Error()
	}
	fmt.Fprintf(os.Stderr, "mcpfn: audit rows are written before the response: %s\n", why)
	return env, nil
}

// option is the audit's place among the function's options (first, so its
// AfterToolCall runs last).
func (e environmentAudit) option() []Option {
	switch {
	case e.queue != nil:
		return []Option{WithAuditQueue(e.queue), withAnswersClosedByRuntime()}
	case e.auditor != nil:
		return []Option{WithAuditor(e.auditor)}
	}
	return nil
}

// serve runs fn as this process's Lambda function. In after-response mode
// the extension's loop holds each invocation open until its rows are
// settled, and the process handles SIGTERM itself (the registered
// extension is what makes Lambda send it); otherwise aws-lambda-go's
// WithEnableSIGTERM does.
func (e environmentAudit) serve(fn *Function) {
	if e.queue == nil {
		lambda.StartWithOptions(fn.Streaming(), lambda.WithEnableSIGTERM(fn.Shutdown))
		return
	}
	go func() {
		err := e.ext.Run(context.Background(), func(ev lambdaext.Event) {
			var limit time.Time
			if d := ev.Deadline(); !d.IsZero() {
				limit = d.Add(-auditMargin)
			}
			e.queue.Wait(ev.RequestID, limit)
		})
		fn.logf("mcpfn: the audit extension stopped: %v", err)
	}()
	sigterm := make(chan os.Signal, 1)
	signal.Notify(sigterm, syscall.SIGTERM)
	go func() {
		<-sigterm
		ctx, cancel := context.WithTimeout(context.Background(), shutdownDrain)
		defer cancel()
		_ = e.queue.Drain(ctx)
		fn.Shutdown()
	}()
	lambda.StartWithOptions(fn.Streaming())
}
