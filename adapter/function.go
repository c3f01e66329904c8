package adapter

import (
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync/atomic"

	"github.com/mcpfn/mcpfn/calltoken"
)

// Function is one tool served as a Lambda function. Its Invoke method
// (invoke.go) is the aws-lambda-go entry point (a lambda.Handler); it is
// safe for concurrent invocations (Lambda Managed Instances run several in
// one process).
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
	if tool.fwd != nil {
		// A forwarded tool served (a test's use: it has no handler)
		// validates with its decoded schemas.
		full := tool.schemas()
		if full == nil {
			panic(fmt.Sprintf("adapter: tool %q: its declaration's schemas do not decode or resolve (ToolFromDeclaration says why)", tool.name))
		}
		tool = full
	}
	o := options{reserve: DefaultReserve, limits: DefaultLimits(), claim: DefaultClaimCheck(), teardownScopes: []TeardownScope{TeardownCall}}
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		o.logger = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	if o.stateKeySet && len(o.stateKey) < calltoken.MinSecretBytes {
		panic(fmt.Sprintf("adapter: a request-state key must be at least %d bytes, got %d", calltoken.MinSecretBytes, len(o.stateKey)))
	}
	if len(o.stateKey) == 0 && o.verifier == nil {
		o.stateKey = randomStateKey()
	}
	f := &Function{tool: tool, opts: o, envTD: &environmentTeardown{}}
	f.hooks = o.hooks
	if o.auditor != nil {
		// An ordinary hook set, in the place its option was given.
		f.hooks = slices.Insert(slices.Clone(o.hooks), o.auditAt, auditHooks(o.auditor, tool, f.logf))
	}
	return f
}

// Tool returns the function's tool.
func (f *Function) Tool() *Tool { return f.tool }

// Shutdown runs environment-scoped teardowns (Start calls it on SIGTERM). A
// teardown that panics is logged, as a call's is, and the others still run.
func (f *Function) Shutdown() { f.envTD.run(f.logf) }

func (f *Function) logf(format string, args ...any) {
	f.opts.logger.Error(fmt.Sprintf(format, args...), "tool", f.tool.name)
}
