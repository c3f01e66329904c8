package mcpfntest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/calltoken"
	"github.com/mcpfn/mcpfn/internal/lambdatest"
	"github.com/mcpfn/mcpfn/wire"
)

// Result is what one call left: what the MCP client reads, and the audit
// rows.
type Result struct {
	// CallToolResult is the MCP CallToolResult the client receives
	// (content, structuredContent, isError), as JSON; of the last round
	// when the tool asked for input. Nil when RPCError is set.
	CallToolResult json.RawMessage
	// IsError is the result's isError: the call failed.
	IsError bool
	// Err is the failed call's error as the client reads it (code,
	// message, retryable, details, hint); nil when the call succeeded. An
	// unexpected error reaches it scrubbed (INTERNAL_SERVER_ERROR,
	// "Internal server error"); its raw message is in the row's RawError.
	Err *adapter.Error
	// Structured is the result's structuredContent; nil when it has none.
	Structured json.RawMessage
	// RPCError is the JSON-RPC error of a call refused as a protocol error
	// (a request state that fails its seal, answers that are not result
	// objects); nil otherwise.
	RPCError *wire.RPCError
	// Rows are the audit rows the call handed to the audit, in that order,
	// as the adapter hands them to its Recorder (before an auditor
	// sanitises them: ArgsPreview is empty, Arguments are raw): a
	// destructive tool's pending row, then the final row, for each round.
	// The audit table keeps one row per call id, so the rows of a replay
	// refused with CONFLICT are here but would not be stored.
	Rows []audit.Row
	// Progress are the progress reports the call made, in order; only a
	// call with [OnProgress] asks for them.
	Progress []Progress
	// Rounds is how many rounds the call took: 1, plus one per round of
	// input requests the tool made ([Answer]).
	Rounds int
}

// Progress is one progress report of a call (adapter.Call.Progress).
type Progress struct {
	Progress float64
	Total    float64 // 0: unknown
	Message  string
}

// Code is the failed call's error code, "" when it succeeded.
func (r *Result) Code() adapter.Code {
	if r.Err == nil {
		return ""
	}
	return r.Err.Code
}

// Output decodes a successful call's structured output into T. A call that
// failed, or that returned no structured content, fails the test.
func Output[T any](t testing.TB, r *Result) T {
	t.Helper()
	var out T
	switch {
	case r.RPCError != nil:
		t.Fatalf("mcpfntest: the call failed with JSON-RPC error %d: %s", r.RPCError.Code, r.RPCError.Message)
	case r.IsError:
		t.Fatalf("mcpfntest: the call failed: %s: %s (details %v, hint %q)", r.Err.Code, r.Err.Message, r.Err.Details, r.Err.Hint)
	case r.Structured == nil:
		t.Fatalf("mcpfntest: the call returned no structured content: %s", r.CallToolResult)
	}
	if err := json.Unmarshal(r.Structured, &out); err != nil {
		t.Fatalf("mcpfntest: decoding the output into %T: %v", out, err)
	}
	return out
}

// defaultTimeout is a function's default timeout (adapter.ToolDef.Timeout).
const defaultTimeout = 10 * time.Second

// maxRounds bounds the rounds of one call: a tool that never stops asking
// fails the test instead of hanging it.
const maxRounds = 32

// Call calls the function's tool with args (a value that marshals to a JSON
// object; nil is {}) as the gateway does: in an mcpfn envelope of the
// modern protocol era, signed for the caller (by default [DefaultSubject]
// with every scope the tool requires), through the function's Lambda entry
// point. A failed call does not fail the test; a call that cannot be made
// (arguments that do not marshal, an answer that is not one, a round of
// input requests without [Answer]) does.
func (f *Function) Call(t testing.TB, args any, opts ...Option) *Result {
	t.Helper()
	o := callOptions{ctx: context.Background(), timeout: defaultTimeout, caller: &adapter.Identity{
		Subject: DefaultSubject, AuthMethod: "jwt", ClientID: clientID, Issuer: issuer, Scopes: f.tool.Scopes(),
	}}
	for _, opt := range opts {
		opt(&o)
	}
	if o.tenant != "" {
		if o.caller == nil {
			t.Fatal("mcpfntest: Tenant names the verified caller's tenant, and Anonymous has no caller")
		}
		o.caller = o.caller.Clone()
		o.caller.Tenant = o.tenant
	}
	raw := json.RawMessage("{}")
	if args != nil {
		var err error
		if raw, err = json.Marshal(args); err != nil {
			t.Fatalf("mcpfntest: the arguments do not marshal: %v", err)
		}
	}
	callID := o.callID
	if callID == "" {
		callID = wire.NewCallID()
	}
	env := o.envelope(f.tool.Name(), raw)
	res := &Result{}
	for round := 1; ; round++ {
		if round > maxRounds {
			t.Fatalf("mcpfntest: the tool still asks for input after %d rounds", maxRounds)
		}
		res.Rounds = round
		// Each round is a tools/call request of its own, to which the
		// gateway gives a call id of its own.
		env.CallID = callID
		if round > 1 {
			env.CallID += "/" + strconv.Itoa(round)
		}
		env.CallToken = f.sign(t, env.CallID, o.caller, raw, env.Params.InputResponses, env.Params.RequestState)
		answer := f.invoke(t, &env, &o, res)
		var resp wire.EnvelopeResponse
		if err := json.Unmarshal(answer, &resp); err != nil {
			t.Fatalf("mcpfntest: the function's answer is not an envelope response: %v\n%s", err, answer)
		}
		if resp.StartTask {
			t.Fatal("mcpfntest: the tool asked to run the call as a task (adapter.StartTask); the kit makes synchronous calls only")
		}
		if resp.Error != nil {
			res.CallToolResult, res.IsError, res.Err, res.Structured, res.RPCError = nil, false, nil, nil, resp.Error
			return res
		}
		next := readRound(t, resp.Result, res)
		if next == nil {
			return res
		}
		if o.answer == nil {
			t.Fatalf("mcpfntest: the tool asked for input (%d requests) and the call has no mcpfntest.Answer", len(next.InputRequests))
		}
		b, err := json.Marshal(next.answers(o.answer))
		if err != nil {
			t.Fatalf("mcpfntest: the answers do not marshal: %v", err)
		}
		env.Params.InputResponses, env.Params.RequestState = b, next.RequestState
	}
}

// envelope is the call's first request as the gateway sends it, but for its
// call id and token.
func (o *callOptions) envelope(tool string, args json.RawMessage) wire.Envelope {
	env := wire.Envelope{
		Version:     wire.EnvelopeVersion,
		Params:      wire.EnvelopeParams{Name: tool, Arguments: args, Meta: o.meta},
		SessionID:   o.session,
		TraceHeader: o.trace,
		MCP: wire.EnvelopeMCP{
			Era: wire.EraModern, Method: "tools/call", ProtocolVersion: wire.ModernProtocolVersion,
			ClientInfo: &wire.ClientInfo{Name: clientID, Version: "1"}, JSONRPCID: json.RawMessage("1"),
		},
	}
	if o.progress {
		env.Stream = &wire.StreamRequest{Progress: true}
	}
	return env
}

// The caller the kit's calls name, as a gateway's verified token would.
const (
	clientID = "mcpfntest"
	issuer   = "https://mcpfntest.invalid"
)

// DefaultSubject is the caller of a call that names none (neither [As],
// [AsIdentity] nor [Anonymous]): a user verified by JWT who holds every
// scope the tool requires.
const DefaultSubject = "test-user"

// sign returns the call token the gateway would send with this call.
func (f *Function) sign(t testing.TB, callID string, caller *adapter.Identity, args, responses json.RawMessage, state string) string {
	t.Helper()
	tok, err := f.signer.Sign(calltoken.Call{Tool: f.tool.Name(), CallID: callID, Caller: caller, Args: args, Expires: time.Now().Add(time.Minute),
		InputResponses: responses, RequestState: state})
	if err != nil {
		t.Fatalf("mcpfntest: signing the call: %v", err)
	}
	return tok
}

// invoke runs one invocation through the function's entry point — the
// streamed one when the call asked for progress, relaying its frames — and
// returns its answer. The invocation's context carries what the Lambda
// runtime puts there, and the invocation whose rows the kit's recorder
// collects.
func (f *Function) invoke(t testing.TB, env *wire.Envelope, o *callOptions, res *Result) []byte {
	t.Helper()
	payload, err := json.Marshal(env)
	if err != nil {
		t.Fatalf("mcpfntest: %v", err)
	}
	inv := &invocation{f: f}
	ctx, cancel := lambdatest.Context(context.WithValue(o.ctx, invocationKey{}, inv), lambdatest.Invocation{
		RequestID:   wire.NewCallID(),
		FunctionARN: "arn:aws:lambda:us-east-1:000000000000:function:mcpfntest-" + f.tool.Name(),
		Trace:       o.trace,
		Timeout:     o.timeout,
	})
	defer cancel()
	var answer []byte
	if env.Stream == nil {
		if answer, err = f.fn.Invoke(ctx, payload); err != nil {
			t.Fatalf("mcpfntest: Invoke: %v", err)
		}
	} else {
		answer = readStream(t, f.fn.InvokeStream(ctx, payload), o, res)
	}
	rows, final := inv.handed()
	if !final {
		t.Fatal("mcpfntest: the call handed no final row to the kit's audit: was adapter.WithAuditor or WithAuditQueue among New's options? Give mcpfntest.AuditTo instead")
	}
	res.Rows = append(res.Rows, rows...)
	return answer
}

// readStream reads a streamed answer to its end, handing each progress
// frame to the call's sink as it arrives, and returns the final payload.
func readStream(t testing.TB, body io.Reader, o *callOptions, res *Result) []byte {
	t.Helper()
	r := wire.NewStreamReader(body)
	var answer []byte
	for {
		fr, final, err := r.Next()
		switch {
		case errors.Is(err, io.EOF):
			return answer
		case err != nil:
			t.Fatalf("mcpfntest: the streamed answer broke off: %v", err)
		case final != nil:
			answer = final // read on to the end: the invocation is over there
		case fr.Kind == wire.FrameProgress && fr.Progress != nil:
			p := Progress{Progress: *fr.Progress, Message: fr.Message}
			if fr.Total != nil {
				p.Total = *fr.Total
			}
			res.Progress = append(res.Progress, p)
			if o.onProgress != nil {
				o.onProgress(p)
			}
		}
	}
}

// inputRequired is what an input_required round asks for.
type inputRequired struct {
	InputRequests map[string]adapter.InputRequest
	RequestState  string
}

// answers are the client's answers to the requests, by key; answer gets
// them in key order.
func (r *inputRequired) answers(answer func(key string, req adapter.InputRequest) any) map[string]any {
	out := make(map[string]any, len(r.InputRequests))
	for _, key := range slices.Sorted(maps.Keys(r.InputRequests)) {
		out[key] = answer(key, r.InputRequests[key])
	}
	return out
}

// readRound reads one round's CallToolResult into res and returns what it
// asks for, nil when the call is complete.
func readRound(t testing.TB, result json.RawMessage, res *Result) *inputRequired {
	t.Helper()
	var r struct {
		ResultType        string                          `json:"resultType"`
		IsError           bool                            `json:"isError"`
		StructuredContent json.RawMessage                 `json:"structuredContent"`
		Content           []json.RawMessage               `json:"content"`
		InputRequests     map[string]adapter.InputRequest `json:"inputRequests"`
		RequestState      string                          `json:"requestState"`
	}
	if err := json.Unmarshal(result, &r); err != nil {
		t.Fatalf("mcpfntest: the result is not a CallToolResult: %v\n%s", err, result)
	}
	res.CallToolResult, res.IsError, res.Structured, res.Err = result, r.IsError, r.StructuredContent, nil
	if r.IsError {
		res.Err = errorOf(t, r.Content, result)
	}
	if r.ResultType != "input_required" {
		return nil
	}
	return &inputRequired{InputRequests: r.InputRequests, RequestState: r.RequestState}
}

// errorOf decodes the error body a failed call's result carries as its one
// text content item.
func errorOf(t testing.TB, content []json.RawMessage, result json.RawMessage) *adapter.Error {
	t.Helper()
	for _, c := range content {
		var block struct{ Type, Text string }
		if json.Unmarshal(c, &block) != nil || block.Type != "text" {
			continue
		}
		var body wire.ErrorBody
		if json.Unmarshal([]byte(block.Text), &body) == nil && body.Error != "" {
			return &adapter.Error{Code: adapter.Code(body.Error), Message: body.Message, Retryable: body.Retryable, Details: body.Details, Hint: body.Hint}
		}
	}
	t.Fatalf("mcpfntest: an isError result without an mcpfn error body: %s", result)
	return nil
}
