package adapter

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/calltoken"
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
}

// DefaultLimits are the limits used unless [WithLimits] says otherwise.
var DefaultLimits = Limits{
	MaxPayloadBytes:  6 << 20,
	MaxArgumentBytes: 2 << 20,
	MaxDepth:         64,
	MaxBatch:         100,
	MaxIssues:        20,
}

// DefaultReserve is how long before the Lambda deadline a call's context ends,
// leaving time to answer and write the audit row.
const DefaultReserve = 500 * time.Millisecond

type options struct {
	hooks          []Hooks
	reserve        time.Duration
	credentials    CredentialProvider
	auditor        Recorder
	logger         *slog.Logger
	limits         Limits
	teardownScopes []TeardownScope
	stateKey       []byte
	verifier       *calltoken.Verifier
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

// Recorder receives the audit rows of calls; *audit.Auditor is the
// implementation (DynamoDB + X-Ray, with a log fallback).
type Recorder interface {
	// Pending writes the write-ahead row of a destructive tool's call. It
	// returns the row an earlier attempt of the same call id left (prior:
	// the call must not run again), or an error when no row could be
	// written (the call must not run without evidence).
	Pending(ctx context.Context, row *audit.Row) (prior *audit.Row, err error)
	// Record writes the call's final row and span. The final row completes
	// only the pending row of its own attempt (row.AttemptID).
	Record(ctx context.Context, row *audit.Row)
	// Late adds to a final row how a handler that outlived its call ended
	// (row carries CallID, AttemptID, LateOutcome, LateErrorCode,
	// FinishedAt).
	Late(ctx context.Context, row *audit.Row)
}

// WithAuditor records every call with r (the audit hook). [Start] adds an
// *audit.Auditor from the environment when MCPFN_AUDIT_TABLE is set.
func WithAuditor(r Recorder) Option { return func(o *options) { o.auditor = r } }

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
	}
}

// withEnvironmentTeardown is set by Start, which receives SIGTERM.
func withEnvironmentTeardown() Option {
	return func(o *options) { o.teardownScopes = append(o.teardownScopes, TeardownEnvironment) }
}

// Function is one tool served as a Lambda function. Its Invoke method is the
// aws-lambda-go entry point (a lambda.Handler); it is safe for concurrent
// invocations (Lambda Managed Instances run several in one process).
type Function struct {
	tool   *Tool
	opts   options
	hooks  []Hooks
	envTD  *environmentTeardown
	warmed atomic.Bool
}

// New builds the Function for tool. Use [Start] in main; use New in tests and
// to embed the function in another runtime.
func New(tool *Tool, opts ...Option) *Function {
	o := options{reserve: DefaultReserve, limits: DefaultLimits, teardownScopes: []TeardownScope{TeardownCall}}
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		o.logger = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	if len(o.stateKey) > 0 && len(o.stateKey) < calltoken.MinSecretBytes {
		panic(fmt.Sprintf("adapter: a request-state key must be at least %d bytes, got %d", calltoken.MinSecretBytes, len(o.stateKey)))
	}
	if len(o.stateKey) == 0 && o.verifier == nil {
		o.stateKey = randomStateKey()
	}
	f := &Function{tool: tool, opts: o, envTD: &environmentTeardown{}}
	// The audit hook set goes first, so its AfterToolCall runs last and
	// sees every other hook's dimensions.
	if o.auditor != nil {
		f.hooks = append(f.hooks, auditHooks(o.auditor, tool, f.logf))
	}
	f.hooks = append(f.hooks, o.hooks...)
	return f
}

// Tool returns the function's tool.
func (f *Function) Tool() *Tool { return f.tool }

// Shutdown runs environment-scoped teardowns (Start calls it on SIGTERM).
func (f *Function) Shutdown() { f.envTD.run() }

// Invoke handles one Lambda invocation. It never returns an error: every
// failure is answered in the format the caller spoke, so a malformed payload
// is a clear result and an audit row rather than a Lambda function error.
func (f *Function) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	started := time.Now()
	lc, _ := lambdacontext.FromContext(ctx)
	inv := decodeInvocation(payload, lc, f.opts.limits)
	cold := !f.warmed.Swap(true) && processCold.Swap(false)

	if !inv.batch {
		out := f.encode(inv.calls[0], f.serve(ctx, inv.calls[0], 0, lc, cold, started))
		if out == nil {
			// A notification has no response; Lambda still needs a body.
			return []byte("null"), nil
		}
		return out, nil
	}
	// A batch's calls run concurrently, each in its own Call and context.
	resps := make([]json.RawMessage, len(inv.calls))
	var wg sync.WaitGroup
	for i, d := range inv.calls {
		wg.Go(func() {
			resps[i] = f.encode(d, f.serve(ctx, d, i, lc, cold && i == 0, started))
		})
	}
	wg.Wait()
	out := make([]json.RawMessage, 0, len(resps))
	for _, r := range resps {
		if r != nil {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		// A batch of notifications only has no response body.
		return []byte("null"), nil
	}
	return json.Marshal(out)
}

// processCold is true until the first invocation of this process.
var processCold atomic.Bool

func init() { processCold.Store(true) }

// response is one call's answer before it is put in the caller's format.
type response struct {
	result json.RawMessage // a CallToolResult (or a tools/list / initialize result)
	rpcErr *RPCError
	callID string
}

// serve answers one decoded call.
func (f *Function) serve(ctx context.Context, d *decoded, index int, lc *lambdacontext.LambdaContext, cold bool, started time.Time) response {
	if d.source == SourceJSONRPC && d.err == nil && d.method != "tools/call" {
		return f.serveProtocol(d)
	}
	return f.runCall(ctx, d, index, lc, cold, started)
}

// serveProtocol answers the JSON-RPC methods that are not tool calls. They
// leave no audit row: nothing was called.
func (f *Function) serveProtocol(d *decoded) response {
	switch d.method {
	case "tools/list":
		b, _ := json.Marshal(map[string]any{"tools": []any{f.tool.MCPTool()}})
		return response{result: b}
	case "initialize":
		b, _ := json.Marshal(map[string]any{
			"protocolVersion": "2025-11-25",
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      map[string]any{"name": "mcpfn/" + f.tool.name, "version": "1"},
		})
		return response{result: b}
	case "ping":
		return response{result: json.RawMessage(`{}`)}
	}
	if d.isNotify {
		return response{}
	}
	return response{rpcErr: &RPCError{Code: RPCMethodNotFound, Message: "method not found: " + d.method +
		"; this function answers tools/call, tools/list, initialize and ping"}}
}

// encode puts a response in the caller's format. It returns nil for a
// JSON-RPC notification.
func (f *Function) encode(d *decoded, r response) json.RawMessage {
	var v any
	switch d.source {
	case SourceEnvelope:
		v = EnvelopeResponse{Version: EnvelopeVersion, CallID: r.callID, Result: r.result, Error: r.rpcErr}
	case SourceAgentCore:
		if r.rpcErr != nil {
			// AgentCore expects a CallToolResult; a protocol failure
			// becomes an error result.
			v = errorResult(NewError(CodeBadRequest, r.rpcErr.Message))
		} else {
			v = r.result
		}
	default: // JSON-RPC, and payloads in no format (answered as JSON-RPC)
		if d.isNotify && d.err == nil {
			return nil
		}
		id := d.rpcID
		if len(id) == 0 {
			id = json.RawMessage("null")
		}
		v = rpcResponse{JSONRPC: "2.0", ID: id, Result: r.result, Error: r.rpcErr}
	}
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(rpcResponse{JSONRPC: "2.0", ID: json.RawMessage("null"),
			Error: &RPCError{Code: RPCInternalError, Message: "the result could not be encoded"}})
	}
	return b
}

type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}
