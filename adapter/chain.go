package adapter

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/mcpfn/mcpfn/audit"
)

// PanicError is the error a recovered panic becomes. Hooks receive it (with
// the stack); the caller sees INTERNAL_SERVER_ERROR.
type PanicError struct {
	Value any
	Stack []byte
}

func (p *PanicError) Error() string { return fmt.Sprintf("panic: %v", p.Value) }

// Unwrap exposes a panicked error value to errors.Is/As.
func (p *PanicError) Unwrap() error {
	if err, ok := p.Value.(error); ok {
		return err
	}
	return nil
}

// traceHeaderKey is the context key aws-lambda-go stores the invocation's
// X-Ray header under. The _X_AMZN_TRACE_ID variable is deliberately never
// read: on Lambda Managed Instances concurrent invocations share it.
const traceHeaderKey = "x-amzn-trace-id"

// buildCall is step 1's second half: the per-call context, from the decoded
// invocation and the Lambda context only.
func (f *Function) buildCall(ctx context.Context, d *decoded, index int, lc *lambdacontext.LambdaContext, cold bool, started time.Time) *Call {
	c := &Call{
		ID:        d.callID,
		Source:    d.source,
		Tool:      d.toolName,
		MCP:       d.mcp,
		SessionID: d.sessionID,
		StartedAt: started,
		Arguments: d.args,
		received:  d.args,
		AgentCore: d.agentCore,
		teardown:  teardownList{scopes: f.opts.teardownScopes, env: f.envTD},
	}
	c.Lambda = LambdaFacts{
		FunctionName:    lambdacontext.FunctionName,
		FunctionVersion: lambdacontext.FunctionVersion,
		ColdStart:       cold,
	}
	if dl, ok := ctx.Deadline(); ok {
		c.Lambda.Deadline = dl
	}
	if lc != nil {
		c.Lambda.RequestID = lc.AwsRequestID
		c.Lambda.FunctionARN = lc.InvokedFunctionArn
		c.Lambda.TenantID = lc.TenantID
		if c.Tenant == "" {
			c.Tenant = lc.TenantID
		}
	}
	if c.ID == "" {
		base := c.Lambda.RequestID
		if base == "" {
			base = randomHex(16)
		}
		c.ID = base + "#" + strconv.Itoa(index)
	}
	if h, _ := ctx.Value(traceHeaderKey).(string); h != "" {
		c.Trace = ParseTraceHeader(h)
		c.Trace.From = "lambda"
	} else if d.envTrace != "" {
		// The envelope's header is payload: one that is not a well-formed
		// X-Ray header is dropped, as the gateway drops a caller's.
		if t := ParseTraceHeader(d.envTrace); traceRootPattern.MatchString(t.Root) && (t.Parent == "" || spanIDPattern.MatchString(t.Parent)) {
			c.Trace = t
			c.Trace.From = "envelope"
		}
	}
	if d.meta != nil {
		if tp, ok := d.meta["traceparent"].(string); ok {
			if w3c, valid := audit.ParseTraceparent(tp); valid && c.Trace.Root == "" {
				// SEP-414: where no X-Ray header exists, the caller's
				// W3C trace context is the parent (docs/tracing.md).
				c.Trace = ParseTraceHeader(w3c.XRayHeader())
				c.Trace.From = "traceparent"
			} else {
				c.Trace.Link = tp
			}
		}
	}
	c.Trace.SpanID = randomHex(8)
	c.creds.provider = f.opts.credentials
	return c
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// runCall runs steps 1–9 of the hook chain for one call.
func (f *Function) runCall(parent context.Context, d *decoded, index int, lc *lambdacontext.LambdaContext, cold bool, started time.Time) response {
	call := f.buildCall(parent, d, index, lc, cold, started)
	ctx := context.WithValue(parent, callKey{}, call)
	if dl, ok := parent.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, dl.Add(-f.opts.reserve))
		defer cancel()
	}

	out := &Outcome{Stage: StageDecode}
	var resp response
	resp.callID = call.ID

	// Step 9 and the call's teardown run on every path, once. They get the
	// parent context: the call's own may have ended, and the audit write
	// is what the reserve was kept for.
	defer func() {
		out.Duration = time.Since(started)
		if out.Err != nil {
			out.Public = publicError(out.Err)
		}
		if call.MCP != nil && call.MCP.Outcome == "" {
			call.MCP.Outcome = "complete"
		}
		f.afterToolCall(parent, call, out)
		call.runCallTeardown(f.logf)
	}()

	fail := func(stage Stage, err error) response {
		out.Stage, out.Err = stage, err
		var pe *PanicError
		out.Panicked = errors.As(err, &pe)
		out.Result = errorResult(publicError(err))
		return response{result: out.Result, callID: call.ID}
	}

	// Step 1 (decode) failed, or named another tool.
	if d.err != nil {
		r := fail(StageDecode, d.err)
		if d.rpcCode != 0 {
			r = response{rpcErr: &RPCError{Code: d.rpcCode, Message: d.err.Message}, callID: call.ID}
		}
		return r
	}
	if d.toolName != f.tool.name {
		// A protocol failure like every other decode failure: the row
		// says BAD_REQUEST, as an AgentCore caller is told.
		err := Errorf(CodeBadRequest, "unknown tool %q; this function serves %q", d.toolName, f.tool.name)
		fail(StageDecode, err)
		return response{rpcErr: &RPCError{Code: RPCInvalidParams, Message: err.Message}, callID: call.ID}
	}

	// Still step 1: who is calling. The identity comes from a call token
	// that verifies, and from nothing else; an envelope whose token does not
	// verify is refused before any hook runs.
	if err := f.authenticate(ctx, call, d); err != nil {
		return fail(StageAuthenticate, err)
	}

	// Still step 1: a multi-round retry's state must be the one this tool
	// sealed for this caller, and its answers must have MCP's shape.
	if err := f.decodeRound(call, d); err != nil {
		fail(StageDecode, err)
		return response{rpcErr: &RPCError{Code: RPCInvalidParams, Message: err.Message}, callID: call.ID}
	}

	// Step 2: BeforeToolCall, in order, each under the call's deadline.
	for _, h := range f.hooks {
		if h.BeforeToolCall == nil {
			continue
		}
		args := call.Arguments
		r, _ := bounded(ctx, call, func(ctx context.Context, call *Call) (json.RawMessage, error) {
			return h.BeforeToolCall(ctx, call, args)
		})
		if r.timedOut {
			return fail(StageBeforeToolCall, f.timeoutError(StageBeforeToolCall, r.err))
		}
		if r.err != nil {
			return fail(StageBeforeToolCall, r.err)
		}
		if r.v != nil {
			call.Arguments = r.v
		}
	}

	// Step 3: the arguments against the input schema, then into the
	// handler's input type.
	args, err := f.validateArguments(call.Arguments)
	if err != nil {
		return fail(StageValidateInput, err)
	}
	call.Arguments = args
	handler, err := f.tool.bind(args)
	if err != nil {
		return fail(StageValidateInput, err)
	}

	// Steps 4–6: errors here would lose information when scrubbed, so
	// OnToolError sees them raw (step 8) before AfterToolCall.
	output, replaced, stage, err := f.gateAndHandle(ctx, call, handler, out)
	if more := (*InputRequired)(nil); err != nil && stage == StageHandler && errors.As(err, &more) {
		// Not a failure: the round ends asking the client for input.
		result, rerr := f.inputRequired(call, more)
		if rerr != nil {
			return fail(StageHandler, rerr)
		}
		if call.MCP != nil {
			call.MCP.Outcome = "input_required"
		}
		out.Stage, out.Result = StageDone, result
		return response{result: result, callID: call.ID}
	}
	if err != nil {
		f.onToolError(parent, call, err)
		return fail(stage, err)
	}

	// Step 7: the output against the output schema.
	result, err := f.successResult(output, replaced || !f.tool.outputTrusted)
	if err != nil {
		return fail(StageValidateOutput, err)
	}
	out.Stage, out.Output, out.Result = StageDone, output, result
	return response{result: result, callID: call.ID}
}

// gateAndHandle runs steps 4 (scope check, BeforeHandle, credentials), 5
// (the handler) and 6 (AfterHandle), each hook, credential and the handler
// raced against the call's deadline: a step that hangs ends the call with
// TIMEOUT at its stage, in time for the final audit row. A handler still
// running at the deadline is left in out.Unfinished.
func (f *Function) gateAndHandle(ctx context.Context, call *Call, handler func(context.Context, *Call) (any, error), out *Outcome) (output any, replaced bool, _ Stage, _ error) {
	if err := f.checkScopes(call); err != nil {
		return nil, false, StageBeforeHandle, err
	}
	for _, h := range f.hooks {
		if h.BeforeHandle == nil {
			continue
		}
		r, _ := bounded(ctx, call, func(ctx context.Context, call *Call) (struct{}, error) { return struct{}{}, h.BeforeHandle(ctx, call) })
		if r.timedOut {
			return nil, false, StageBeforeHandle, f.timeoutError(StageBeforeHandle, r.err)
		}
		if r.err != nil {
			return nil, false, StageBeforeHandle, r.err
		}
	}
	if err := f.resolveCredentials(ctx, call); err != nil {
		return nil, false, StageBeforeHandle, err
	}

	output, unfinished, err := f.handle(ctx, call, handler)
	if err != nil {
		out.Unfinished = unfinished
		return nil, false, StageHandler, err
	}

	for i := len(f.hooks) - 1; i >= 0; i-- {
		h := f.hooks[i]
		if h.AfterHandle == nil {
			continue
		}
		cur := output
		r, _ := bounded(ctx, call, func(ctx context.Context, call *Call) (any, error) { return h.AfterHandle(ctx, call, cur) })
		if r.timedOut {
			return nil, false, StageAfterHandle, f.timeoutError(StageAfterHandle, r.err)
		}
		if r.err != nil {
			return nil, false, StageAfterHandle, r.err
		}
		if r.v != nil {
			output, replaced = r.v, true
		}
	}
	return output, replaced, StageDone, nil
}

// handle runs the handler under the call's deadline. A handler that ignores
// its context and is still running at the deadline is returned as
// Unfinished, which reports its end if it comes.
func (f *Function) handle(ctx context.Context, call *Call, handler func(context.Context, *Call) (any, error)) (any, *Unfinished, error) {
	r, running := bounded(ctx, call, handler)
	if !r.timedOut {
		return r.v, nil, r.err
	}
	var u *Unfinished
	if running != nil {
		u = &Unfinished{done: make(chan struct{})}
		go func() {
			late := <-running
			u.err, u.finished = late.err, time.Now()
			close(u.done)
		}()
	}
	return nil, u, f.timeoutError(StageHandler, r.err)
}

// stepResult is what one step of the chain returned.
type stepResult[T any] struct {
	v   T
	err error
	// timedOut: the call's context ended before the step returned, or the
	// step returned the context's own error. err is then ctx.Err().
	timedOut bool
}

// bounded runs fn, one step of the chain, on its own goroutine, guarded
// against panics, and waits for it or for the end of ctx, whichever comes
// first. Go cannot stop a step that ignores its context: it runs on, and
// running is where its result will arrive (nil when the step returned).
func bounded[T any](ctx context.Context, call *Call, fn func(context.Context, *Call) (T, error)) (r stepResult[T], running <-chan stepResult[T]) {
	done := make(chan stepResult[T], 1)
	go func() {
		var r stepResult[T]
		r.err = guard(func() error {
			var err error
			r.v, err = fn(ctx, call)
			return err
		})
		done <- r
	}()
	select {
	case r = <-done:
	case <-ctx.Done():
		select {
		case r = <-done: // returned at the same instant: its answer counts
		default:
			return stepResult[T]{err: ctx.Err(), timedOut: true}, done
		}
	}
	if r.err != nil && ctx.Err() != nil && errors.Is(r.err, ctx.Err()) {
		return stepResult[T]{err: ctx.Err(), timedOut: true}, nil
	}
	return r, nil
}

// timeoutError is the TIMEOUT of a step that did not finish by the call's
// deadline. Once the handler has started, a destructive tool may have taken
// effect; a destructive tool that is not idempotent must then not be retried
// blindly, as the gateway says of a call it lost (gateway/forward.go).
func (f *Function) timeoutError(stage Stage, cause error) *Error {
	e := NewError(CodeTimeout, "the tool did not finish within its time limit")
	if !f.tool.destructive || (stage != StageHandler && stage != StageAfterHandle) {
		return e.WithHint("retry; if it keeps timing out, narrow the request").WithCause(cause)
	}
	e.Message = "the tool did not finish within its time limit; its outcome is unknown"
	if f.tool.idem {
		return e.WithHint("the call may have taken effect; this tool is idempotent, so retrying is safe").WithCause(cause)
	}
	e.Retryable = false
	return e.WithHint("this tool is destructive and the call may have taken effect: check before calling it again").WithCause(cause)
}

// checkScopes is the built-in part of the authorization gate: a tool that
// requires scopes fails closed without a verified identity.
func (f *Function) checkScopes(call *Call) error {
	if len(f.tool.scopes) == 0 {
		return nil
	}
	if call.Caller == nil {
		return NewError(CodeUnauthorized, "this tool requires a verified caller").
			WithHint("call it through an authenticated gateway")
	}
	var missing []string
	for _, s := range f.tool.scopes {
		if !call.Caller.HasScope(s) {
			missing = append(missing, s)
		}
	}
	if len(missing) > 0 {
		return Errorf(CodeForbidden, "the caller lacks the scope(s) this tool requires").
			WithDetails(map[string]any{"missingScopes": missing})
	}
	return nil
}

// resolveCredentials resolves the tool's declared needs onto the call.
func (f *Function) resolveCredentials(ctx context.Context, call *Call) error {
	if len(f.tool.needs) == 0 {
		return nil
	}
	if !call.HasCredentials() {
		return NewError(CodeInternal, "Internal server error").WithCause(ErrNoCredentials)
	}
	resolved := make(map[string]*Credential, len(f.tool.needs))
	provider := call.creds.provider
	for _, need := range f.tool.needs {
		r, _ := bounded(ctx, call, func(ctx context.Context, call *Call) (*Credential, error) {
			return provider.Resolve(ctx, call, need)
		})
		if r.timedOut {
			return f.timeoutError(StageBeforeHandle, fmt.Errorf("resolving credential %q: %w", need.Name, r.err))
		}
		if r.err != nil {
			return fmt.Errorf("resolving credential %q: %w", need.Name, r.err)
		}
		resolved[need.Name] = r.v
	}
	call.creds.resolved = resolved
	return nil
}

// guard runs fn, turning a panic into a *PanicError.
func guard(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return fn()
}

// onToolError is step 8: observe only; a panic is logged and swallowed.
func (f *Function) onToolError(ctx context.Context, call *Call, err error) {
	for i := len(f.hooks) - 1; i >= 0; i-- {
		h := f.hooks[i]
		if h.OnToolError == nil {
			continue
		}
		if perr := guard(func() error { h.OnToolError(ctx, call, err); return nil }); perr != nil {
			f.logf("mcpfn: OnToolError hook panicked: %v", perr)
		}
	}
}

// afterToolCall is step 9.
func (f *Function) afterToolCall(ctx context.Context, call *Call, out *Outcome) {
	for i := len(f.hooks) - 1; i >= 0; i-- {
		h := f.hooks[i]
		if h.AfterToolCall == nil {
			continue
		}
		if perr := guard(func() error { h.AfterToolCall(ctx, call, out); return nil }); perr != nil {
			f.logf("mcpfn: AfterToolCall hook panicked: %v", perr)
		}
	}
}

func (f *Function) logf(format string, args ...any) {
	f.opts.logger.Error(fmt.Sprintf(format, args...), "tool", f.tool.name)
}

// decodeRound verifies a multi-round retry's request state and decodes its
// input responses onto the call.
func (f *Function) decodeRound(call *Call, d *decoded) *Error {
	if d.requestState != "" {
		st, err := openState(f.stateKeys(time.Now()), call, d.requestState, time.Now())
		if err != nil {
			return NewError(CodeBadRequest, err.Error()).WithCause(err)
		}
		call.requestState = st
	}
	responses, err := decodeInputResponses(d.inputResponses)
	if err != nil {
		return NewError(CodeBadRequest, err.Error()).WithCause(err)
	}
	call.inputResponses = responses
	return nil
}

// inputRequired builds the result of a round that asks for input.
func (f *Function) inputRequired(call *Call, ir *InputRequired) (json.RawMessage, error) {
	if len(ir.Requests) == 0 {
		return nil, NewError(CodeInternal, "Internal server error").WithCause(errors.New("RequireInput with no input requests"))
	}
	sealed := ""
	if ir.State != "" {
		sealed = sealState(f.stateKeys(time.Now())[0], call, ir.State, time.Now())
	}
	result, err := inputRequiredResult(ir, sealed)
	if err != nil {
		return nil, NewError(CodeInternal, "Internal server error").WithCause(err)
	}
	return result, nil
}
