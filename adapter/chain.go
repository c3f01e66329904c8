package adapter

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/mcpfn/mcpfn/wire"
)

// callRun is one call on its way through the chain (hooks.go lists the
// steps): the call, its context and what each step leaves for the next.
type callRun struct {
	f      *Function
	parent context.Context // the invocation's: outlives the call's deadline
	ctx    context.Context // the call's: ends reserve before the deadline
	call   *Call
	d      *decoded

	handler  func(context.Context, *Call) (any, error) // bound in step 3
	output   any                                       // from steps 5 and 6
	replaced bool                                      // AfterHandle replaced the output
	out      Outcome

	// Long-running calls (task.go, cancel.go): cancel ends ctx with a
	// cause; stopWatch ends the watch of the call's cancel record; task is
	// the task a task run claimed; rpcErr is a protocol failure's answer.
	cancel    context.CancelCauseFunc
	stopWatch context.CancelFunc
	task      *taskRun
	rpcErr    *wire.RPCError
	// endWait releases the deadline of the gateway's wait (authenticate).
	endWait context.CancelFunc
	// content is a Content output checked in step 7, rendered when the
	// result is stored or answered (claimcheck.go).
	content *checkedContent
}

// callSteps are steps 1–7 of the chain, in order. Each returns the stage at
// which it ends the call and why, or a nil error to go on.
var callSteps = [...]func(*callRun) (Stage, error){
	(*callRun).checkDecoded,   // 1: the payload named this tool, well formed
	(*callRun).authenticate,   // 1: who is calling (identity.go, authenticate.go)
	(*callRun).startRun,       // 1: claim a task run, watch for a cancel (task.go)
	(*callRun).openRound,      // 1: a multi-round retry's state and answers (multiround.go)
	(*callRun).beforeToolCall, // 2
	(*callRun).validateInput,  // 3 (validate.go)
	(*callRun).beforeHandle,   // 4: scopes, BeforeHandle, credentials
	(*callRun).handle,         // 5
	(*callRun).afterHandle,    // 6
	(*callRun).validateOutput, // 7 (result.go)
	(*callRun).storeResult,    // 7: a result too large to answer is stored (claimcheck.go)
}

// runCall runs steps 1–9 of the hook chain for one call.
func (f *Function) runCall(parent context.Context, d *decoded, index int, lc *lambdacontext.LambdaContext, cold bool, started time.Time) response {
	r := &callRun{f: f, parent: parent, d: d, call: f.buildCall(parent, d, index, lc, cold, started), out: Outcome{Stage: StageDecode}}
	r.ctx = context.WithValue(parent, callKey{}, r.call)
	if dl, ok := parent.Deadline(); ok {
		var cancel context.CancelFunc
		r.ctx, cancel = callDeadline(parent)(r.ctx, dl.Add(-f.opts.reserve))
		defer cancel()
	}
	defer func() {
		if r.endWait != nil {
			r.endWait() // after finish: the row is written first
		}
	}()
	defer r.finish(started)
	for _, step := range callSteps {
		if stage, err := step(r); err != nil {
			return r.end(stage, err)
		}
	}
	r.out.Stage = StageDone
	return response{result: r.out.Result, resultRef: r.out.ResultRef, callID: r.call.ID}
}

// protocolError is a failure the caller hears as a JSON-RPC error, not as a
// tool result: the call never reached the tool. The audit row still records
// err, as for any other failure.
type protocolError struct {
	rpcCode int
	err     *Error
}

func (p *protocolError) Error() string { return p.err.Error() }

// checkDecoded is step 1's verdict on the payload.
func (r *callRun) checkDecoded() (Stage, error) {
	d := r.d
	switch {
	case d.err != nil && d.rpcCode != 0:
		return StageDecode, &protocolError{d.rpcCode, d.err}
	case d.err != nil:
		return StageDecode, d.err
	case d.toolName != r.f.tool.name:
		// A protocol failure like every other decode failure: the row
		// says BAD_REQUEST, as an AgentCore caller is told.
		return StageDecode, &protocolError{wire.RPCInvalidParams,
			Errorf(CodeBadRequest, "unknown tool %q; this function serves %q", d.toolName, r.f.tool.name)}
	}
	return StageDecode, nil
}

// authenticate is the end of step 1: the identity comes from a call token
// that verifies, and from nothing else; an envelope whose token does not
// verify is refused before any hook runs.
//
// A synchronous call the gateway forwarded ends when the gateway stops
// waiting for it: its token's expiry (authenticate.go).
func (r *callRun) authenticate() (Stage, error) {
	waited, err := r.f.authenticate(r.ctx, r.call, r.d)
	if err == nil && !waited.IsZero() {
		r.ctx, r.endWait = context.WithDeadline(r.ctx, waited)
	}
	if err == nil {
		// Arguments the gateway stored: read now that the token has
		// vouched for their digest (claimcheck.go).
		err = r.fetchArguments()
	}
	return StageAuthenticate, err
}

// openRound: a multi-round retry's state must be the one this tool sealed
// for this caller, and its answers must have MCP's shape.
func (r *callRun) openRound() (Stage, error) {
	if err := r.f.decodeRound(r.call, r.d); err != nil {
		return StageDecode, &protocolError{wire.RPCInvalidParams, err}
	}
	return StageDecode, nil
}

// beforeToolCall is step 2: each hook in order, under the call's deadline.
func (r *callRun) beforeToolCall() (Stage, error) {
	for _, h := range r.f.hooks {
		if h.BeforeToolCall == nil {
			continue
		}
		args := r.call.Arguments
		res, _ := bounded(r.ctx, r.call, func(ctx context.Context, call *Call) (json.RawMessage, error) {
			return h.BeforeToolCall(ctx, call, args)
		})
		if err := res.failure(r.f, StageBeforeToolCall); err != nil {
			return StageBeforeToolCall, err
		}
		if res.v != nil {
			r.call.Arguments = res.v
		}
	}
	return StageBeforeToolCall, nil
}

// validateInput is step 3: the arguments against the input schema, then
// into the handler's input type.
func (r *callRun) validateInput() (Stage, error) {
	args, err := r.f.validateArguments(r.call.Arguments)
	if err != nil {
		return StageValidateInput, err
	}
	r.call.Arguments = args
	r.handler, err = r.f.tool.bind(args)
	return StageValidateInput, err
}

// beforeHandle is step 4: the built-in scope check, the BeforeHandle hooks
// in order, then the tool's credentials.
func (r *callRun) beforeHandle() (Stage, error) {
	if err := r.f.checkScopes(r.call); err != nil {
		return StageBeforeHandle, err
	}
	for _, h := range r.f.hooks {
		if h.BeforeHandle == nil {
			continue
		}
		res, _ := bounded(r.ctx, r.call, func(ctx context.Context, call *Call) (struct{}, error) { return struct{}{}, h.BeforeHandle(ctx, call) })
		if err := res.failure(r.f, StageBeforeHandle); err != nil {
			return StageBeforeHandle, err
		}
	}
	return StageBeforeHandle, r.f.resolveCredentials(r.ctx, r.call)
}

// handle is step 5: the handler under the call's deadline. A handler that
// ignores its context and is still running at the deadline is left in
// Outcome.Unfinished, which reports its end if it comes.
func (r *callRun) handle() (Stage, error) {
	res, running := bounded(r.ctx, r.call, r.handler)
	if !res.timedOut {
		r.output = res.v
		return StageHandler, res.err
	}
	if running != nil {
		u := &Unfinished{done: make(chan struct{})}
		go func() {
			late := <-running
			u.err, u.finished = late.err, time.Now()
			close(u.done)
		}()
		r.out.Unfinished = u
	}
	return StageHandler, r.f.timeoutError(StageHandler, res.err)
}

// afterHandle is step 6: the AfterHandle hooks in reverse order.
func (r *callRun) afterHandle() (Stage, error) {
	for i := len(r.f.hooks) - 1; i >= 0; i-- {
		h := r.f.hooks[i]
		if h.AfterHandle == nil {
			continue
		}
		cur := r.output
		res, _ := bounded(r.ctx, r.call, func(ctx context.Context, call *Call) (any, error) { return h.AfterHandle(ctx, call, cur) })
		if err := res.failure(r.f, StageAfterHandle); err != nil {
			return StageAfterHandle, err
		}
		if res.v != nil {
			r.output, r.replaced = res.v, true
		}
	}
	return StageAfterHandle, nil
}

// validateOutput is step 7: the output against the output schema.
func (r *callRun) validateOutput() (Stage, error) {
	r.out.Output = r.output
	if c, ok := contentOf(r.output); ok {
		// Rendered by storeResult, which knows whether large blocks
		// become objects of their own.
		checked, err := r.f.checkContent(c)
		r.content = checked
		return StageValidateOutput, err
	}
	result, err := r.f.successResult(r.output, r.replaced || !r.f.tool.outputTrusted)
	if err != nil {
		return StageValidateOutput, err
	}
	r.out.Result = result
	return StageValidateOutput, nil
}

// end answers a call that a step ended: a round that asks for input, a
// protocol failure, or a tool error result. Errors raised in steps 4–6 go
// to OnToolError (step 8) raw, before they are scrubbed.
func (r *callRun) end(stage Stage, err error) response {
	if resp, ok := r.startTask(stage, err); ok {
		return resp
	}
	if more := (*InputRequired)(nil); stage == StageHandler && errors.As(err, &more) {
		// Not a failure: the round ends asking the client for input.
		result, rerr := r.f.inputRequired(r.call, more)
		if rerr != nil {
			return r.fail(StageHandler, rerr)
		}
		if r.call.MCP != nil {
			r.call.MCP.Outcome = "input_required"
		}
		r.out.Stage, r.out.Result = StageDone, result
		return response{result: result, callID: r.call.ID}
	}
	switch stage {
	case StageBeforeHandle, StageHandler, StageAfterHandle:
		r.f.onToolError(r.parent, r.call, err)
	}
	if pe := (*protocolError)(nil); errors.As(err, &pe) {
		r.fail(stage, pe.err)
		r.rpcErr = &wire.RPCError{Code: pe.rpcCode, Message: pe.err.Message}
		return response{rpcErr: r.rpcErr, callID: r.call.ID}
	}
	return r.fail(stage, err)
}

// fail records err as the call's outcome at stage and answers with the
// error result the caller may see.
func (r *callRun) fail(stage Stage, err error) response {
	r.out.Stage, r.out.Err = stage, err
	var pe *PanicError
	r.out.Panicked = errors.As(err, &pe)
	r.out.Result = errorResult(publicError(err))
	return response{result: r.out.Result, callID: r.call.ID}
}

// finish is step 9 and the call's teardown, on every path, once. They get
// the parent context: the call's own may have ended, and the audit write is
// what the reserve was kept for.
func (r *callRun) finish(started time.Time) {
	if r.out.Err != nil {
		r.out.Public = publicError(r.out.Err)
	}
	r.out.Duration = time.Since(started)
	r.finishRun()
	if r.call.MCP != nil && r.call.MCP.Outcome == "" {
		r.call.MCP.Outcome = "complete"
	}
	r.f.afterToolCall(r.parent, r.call, &r.out)
	r.call.runCallTeardown(r.f.logf)
}

// failure is the error a bounded step ends the call with: TIMEOUT at stage
// when the call's deadline came first, else the step's own error.
func (res stepResult[T]) failure(f *Function, stage Stage) error {
	if res.timedOut {
		return f.timeoutError(stage, res.err)
	}
	return res.err
}

// timeoutError is the TIMEOUT of a step that did not finish by the call's
// deadline. Once the handler has started, a destructive tool may have taken
// effect; a destructive tool that is not idempotent must then not be retried
// blindly, as the gateway says of a call it lost (gateway/forward.go).
func (f *Function) timeoutError(stage Stage, cause error) *Error {
	if errors.Is(cause, errCallCancelled) {
		return f.cancelledError(stage, cause)
	}
	const msg = "the tool did not finish within its time limit"
	if !f.tool.destructive || (stage != StageHandler && stage != StageAfterHandle) {
		return NewError(CodeTimeout, msg).WithHint("retry; if it keeps timing out, narrow the request").WithCause(cause)
	}
	e := NewError(CodeTimeout, msg+"; its outcome is unknown")
	if f.tool.idem {
		return e.WithHint("the call may have taken effect; this tool is idempotent, so retrying is safe").WithCause(cause)
	}
	e.Retryable = false // e is this call's own, not shared
	return e.WithHint("this tool is destructive and the call may have taken effect: check before calling it again").WithCause(cause)
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
