package adapter

import (
	"log/slog"
	"time"

	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/calltoken"
	"github.com/mcpfn/mcpfn/claimcheck"
)

// Limits bound what one invocation may cost. Exceeding one is a clear error
// result and an audit row, never a panic or a hang.
type Limits struct {
	// MaxPayloadBytes caps the whole payload (Lambda's own synchronous
	// limit is 6 MB).
	MaxPayloadBytes int
	// MaxArgumentBytes caps a call's arguments (after BeforeToolCall).
	MaxArgumentBytes int
	// MaxDepth caps JSON nesting of the payload and the arguments.
	MaxDepth int
	// MaxBatch caps the requests of one JSON-RPC batch.
	MaxBatch int
	// MaxIssues caps the validation issues returned to the caller. The
	// schema validator stops at the first failure, so an answer holds one
	// issue (path, keyword, message, and the value only when safe to show).
	MaxIssues int
	// MaxAnswerBytes caps a result answered inline to an mcpfn envelope by
	// a function without a payloads bucket ([WithPayloads]): past it the
	// call fails PAYLOAD_TOO_LARGE, naming MCPFN_PAYLOADS_BUCKET, instead
	// of leaving Lambda to fail the invocation. 0 (the default of
	// [New], which runs anywhere): no cap. [Start] sets Lambda's 6 MB
	// answer, less the envelope around the result.
	MaxAnswerBytes int
}

// DefaultLimits returns the limits used unless [WithLimits] says otherwise:
// a 6 MiB payload, 2 MiB of arguments, 64 levels of nesting, 100 requests
// in a batch, 20 validation issues. Each call returns a fresh value, so no
// caller can change another's defaults.
func DefaultLimits() Limits {
	return Limits{
		MaxPayloadBytes:  6 << 20,
		MaxArgumentBytes: 2 << 20,
		MaxDepth:         64,
		MaxBatch:         100,
		MaxIssues:        20,
	}
}

// DefaultReserve is how long before the Lambda deadline a call's context ends,
// leaving time to answer and write the audit row.
const DefaultReserve = 500 * time.Millisecond

type options struct {
	hooks       []Hooks
	reserve     time.Duration
	credentials CredentialProvider
	auditor     Recorder
	auditAt     int // where in hooks the audit hook set goes
	// answered, when set, hears of each invocation once the function has
	// answered it (every row it will queue is queued by then).
	answered func(requestID string)
	// hold, when set (Start, in the after-response mode), makes the
	// answer's Close end the invocation — aws-lambda-go closes it once it
	// has posted it — and then wait until its rows are settled, or until
	// the limit: the runtime asks for its next invocation only then
	// (invoke.go).
	hold           func(requestID string, limit time.Time) bool
	logger         *slog.Logger
	limits         Limits
	teardownScopes []TeardownScope
	stateKey       []byte
	stateKeySet    bool // WithRequestStateKey was given, even with an empty key
	verifier       *calltoken.Verifier
	tasks          taskOptions // task.go
	// The claim check (claimcheck.go): the payloads bucket, nil without.
	payloads *claimcheck.Store
	claim    ClaimCheck
}

// Option configures a [Function].
type Option func(*options)

// WithHooks adds hook sets. See [Hooks] for the order they run in.
func WithHooks(h ...Hooks) Option { return func(o *options) { o.hooks = append(o.hooks, h...) } }

// WithReserve sets how long before the Lambda deadline the call's context
// ends (default 500 ms).
func WithReserve(d time.Duration) Option { return func(o *options) { o.reserve = d } }

// WithCredentials attaches the provider that resolves the tool's credential
// needs. Without one, every credential request fails closed.
func WithCredentials(p CredentialProvider) Option { return func(o *options) { o.credentials = p } }

// WithAuditor records every call with r through the audit hook set, which
// takes its place among the hook sets where this option is given, like any
// [WithHooks]. [Start] gives it first, with an *audit.Auditor from the
// environment when MCPFN_AUDIT_TABLE is set: its AfterToolCall then runs
// last and its row carries every other set's dimensions.
func WithAuditor(r Recorder) Option {
	return func(o *options) { o.auditor, o.auditAt = r, len(o.hooks) }
}

// WithAuditQueue records every call with q's Auditor, as [WithAuditor]
// does, but writes each call's final row after the call is answered:
// queued on q as a snapshot of the call, keyed by the Lambda request id,
// and built and written only then (a destructive tool's pending row is
// still written before its handler runs). [Start] uses it in the
// after-response mode, holding each invocation open (the runtime's next)
// until q.Wait says its rows are written (MCPFN_AUDIT_MODE, docs/audit.md). The
// function calls q.End for each invocation once it has answered it: when
// Invoke returns; for InvokeStream's reader, once it is read to its end or
// closed (under Start: closed, which aws-lambda-go does once it has posted
// the answer). Used without Start, whoever runs the function must call
// q.Wait per invocation, or q.Drain before the process may be frozen.
func WithAuditQueue(q *audit.Queue) Option {
	return func(o *options) { o.auditor, o.auditAt, o.answered = queuedRecorder{q}, len(o.hooks), q.End }
}

// WithLogger sets the logger for swallowed hook failures (default: JSON to
// stderr, which Lambda sends to CloudWatch Logs).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithLimits replaces [DefaultLimits]; zero fields keep their default.
func WithLimits(l Limits) Option {
	return func(o *options) {
		if l.MaxPayloadBytes > 0 {
			o.limits.MaxPayloadBytes = l.MaxPayloadBytes
		}
		if l.MaxArgumentBytes > 0 {
			o.limits.MaxArgumentBytes = l.MaxArgumentBytes
		}
		if l.MaxDepth > 0 {
			o.limits.MaxDepth = l.MaxDepth
		}
		if l.MaxBatch > 0 {
			o.limits.MaxBatch = l.MaxBatch
		}
		if l.MaxIssues > 0 {
			o.limits.MaxIssues = l.MaxIssues
		}
		if l.MaxAnswerBytes > 0 {
			o.limits.MaxAnswerBytes = l.MaxAnswerBytes
		}
	}
}

// withRowsWrittenBeforeNext is Start's in the after-response mode, with
// WithAuditQueue(q): each invocation's rows are written once aws-lambda-go
// has posted its answer and before it asks for the next one (0039).
func withRowsWrittenBeforeNext(q *audit.Queue) Option {
	return func(o *options) { o.hold = q.Wait }
}

// withEnvironmentTeardown is set by Start, which receives SIGTERM.
func withEnvironmentTeardown() Option {
	return func(o *options) { o.teardownScopes = append(o.teardownScopes, TeardownEnvironment) }
}
