package adapter

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mcpfn/mcpfn/wire"
)

// Hooks is one set of hook functions; any may be nil. Pass several sets with
// [WithHooks]; they compose like middleware:
//
//   - BeforeToolCall and BeforeHandle run in the order the sets were given;
//     the first error stops the chain.
//   - AfterHandle, OnToolError and AfterToolCall run in reverse order, so the
//     first set given (the audit hook, when [Start] adds it) sees the call
//     last, after every other set has had its say.
//
// For one call the adapter runs, exactly:
//
//  1. decode the invocation, build the [Call] and settle its verified facts —
//     the caller from the call token, the tenant, the trace (minted when none
//     came), the arguments (read from the payloads bucket when the gateway
//     stored them, and checked against the token) — which no hook can
//     change (a failure skips to 9);
//  2. BeforeToolCall: may reject, or replace the arguments (they are then
//     validated like the originals);
//  3. validate the arguments against the input schema (VALIDATION_ERROR);
//  4. BeforeHandle: the authorization gate, after the built-in scope check;
//  5. the handler (a panic is recovered and treated as a returned error);
//  6. AfterHandle: may replace the output;
//  7. validate the output against the output schema (a mismatch is
//     INTERNAL_SERVER_ERROR: the tool broke its contract, not the caller);
//     a result too large for the answer is stored in the payloads bucket
//     and answered by reference (the claim check, [ClaimCheck]);
//  8. OnToolError, with the raw error, only for an error raised in 4–6;
//  9. AfterToolCall, exactly once on every path.
//
// The whole chain runs in the call's own [Call] and context: concurrent calls
// never see each other's dimensions, identity, trace or error. Steps 2 and 4–6
// (each hook, each credential resolution, the handler) run under the call's
// deadline, the Lambda deadline less the reserve: one that has not returned by
// then ends the call with TIMEOUT at its stage, so step 9 still runs in time.
// Go cannot stop it; it runs on, and its result is dropped (a handler's late
// end is reported through [Outcome].Unfinished). A panic or error
// in OnToolError or AfterToolCall is logged and swallowed: a broken sink must
// not replace the failure it observes.
type Hooks struct {
	// BeforeToolCall sees the decoded arguments. Return a non-nil replacement
	// to change them, or an error to reject the call.
	BeforeToolCall func(ctx context.Context, call *Call, args json.RawMessage) (json.RawMessage, error)

	// BeforeHandle is the authorization gate. Return an error to refuse.
	BeforeHandle func(ctx context.Context, call *Call) error

	// AfterHandle sees the handler's typed output (as any). Return a non-nil
	// replacement to change it (it is validated against the output schema),
	// or an error to fail the call.
	AfterHandle func(ctx context.Context, call *Call, output any) (any, error)

	// OnToolError observes the raw error of steps 4–6, before it is scrubbed,
	// with its wrapped causes intact. It cannot change the outcome.
	OnToolError func(ctx context.Context, call *Call, err error)

	// AfterToolCall observes every call's outcome. The audit hook lives here.
	AfterToolCall func(ctx context.Context, call *Call, out *Outcome)
}

// Stage names the step of the hook chain where a call ended.
type Stage string

const (
	StageDecode         Stage = "decode"
	StageAuthenticate   Stage = "authenticate"
	StageBeforeToolCall Stage = "before_tool_call"
	StageValidateInput  Stage = "validate_input"
	StageBeforeHandle   Stage = "before_handle"
	StageHandler        Stage = "handler"
	StageAfterHandle    Stage = "after_handle"
	StageValidateOutput Stage = "validate_output"
	StageDone           Stage = "done"
)

// Outcome is what AfterToolCall observes.
type Outcome struct {
	// Err is the raw error, nil on success. For an unexpected error it is the
	// value as returned or recovered, never the scrubbed copy.
	Err error
	// Public is what the caller was told: Err itself when Err is an *Error,
	// else the scrubbed INTERNAL_SERVER_ERROR. Nil on success.
	Public *Error
	// Stage is where the call ended (StageDone on success).
	Stage Stage
	// Output is the tool's output on success.
	Output any
	// Result is the MCP CallToolResult sent to the caller, as JSON. When
	// ResultRef is set it is the result as stored (a large binary block
	// standing as a reference to an object of its own).
	Result json.RawMessage
	// ResultRef is where the result was stored when it was too large for
	// the answer or the task record (the claim check): the caller was sent
	// this reference, and the gateway resolved it.
	ResultRef *wire.ObjectRef
	// Panicked is true when Err was recovered from a panic.
	Panicked bool
	// Duration is the time from the start of decoding to the end of step 7/8.
	Duration time.Duration
	// Unfinished is set when the call ended (TIMEOUT) while its handler was
	// still running: Go cannot stop it, and whatever it does from then on
	// the caller was not told. It reports how the handler ends, if it ends
	// while the process lives.
	Unfinished *Unfinished
}

// Unfinished is a handler that outlived its call. Done is closed when the
// handler returns (or panics); Err and FinishedAt are valid after that. A
// Lambda environment frozen between invocations resumes it on the next
// invocation; one that is shut down never reports.
type Unfinished struct {
	done     chan struct{}
	err      error
	finished time.Time
}

// Done is closed when the handler has returned.
func (u *Unfinished) Done() <-chan struct{} { return u.done }

// Err is the handler's error (nil: it succeeded after all), once Done is
// closed.
func (u *Unfinished) Err() error { return u.err }

// FinishedAt is when the handler returned, once Done is closed.
func (u *Unfinished) FinishedAt() time.Time { return u.finished }

// OK reports whether the call succeeded.
func (o *Outcome) OK() bool { return o.Err == nil }
