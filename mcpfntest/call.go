package mcpfntest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/calltoken"
	"github.com/mcpfn/mcpfn/wire"
)

// DefaultSubject is the caller of a call that names none: a verified user
// holding every scope the tool requires, as `mcpfn local`'s READY token.
const DefaultSubject = "test-user"

// Function is a tool served as its Lambda function serves it, with a test
// call key and an in-memory audit. Calls to one Function share its rows, so
// a test can replay a call id (a destructive tool then refuses to run it
// again). It is safe for concurrent calls.
type Function struct {
	tool   *adapter.Tool
	name   string // the function's name, the call tokens' audience
	fn     *adapter.Function
	signer *calltoken.Signer
	rows   *memoryRows
}

// New serves tool for tests; opts are the adapter's own (hooks, limits,
// credentials…), applied after the kit's verifier and auditor.
func New(t testing.TB, tool *adapter.Tool, opts ...adapter.Option) *Function {
	t.Helper()
	name := "mcpfntest-" + tool.Name()
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	ring, err := calltoken.KeyringFromSecrets([]byte(hex.EncodeToString(secret)))
	if err != nil {
		t.Fatal(err)
	}
	v, err := calltoken.NewVerifier(calltoken.VerifierConfig{Audience: name, Keyring: ring})
	if err != nil {
		t.Fatal(err)
	}
	signer := calltoken.NewSigner(calltoken.SignerGateway)
	signer.Add(tool.Name(), name, ring, nil)
	rows := &memoryRows{}
	all := append([]adapter.Option{adapter.WithCallVerifier(v), adapter.WithAuditor(rows)}, opts...)
	return &Function{tool: tool, name: name, fn: adapter.New(tool, all...), signer: signer, rows: rows}
}

// Call calls tool once, as New(t, tool).Call(t, args, opts...).
func Call(t testing.TB, tool *adapter.Tool, args any, opts ...Option) *Result {
	t.Helper()
	return New(t, tool).Call(t, args, opts...)
}

// Result is what one call left: what the MCP client would see, and the
// audit rows.
type Result struct {
	// CallToolResult is the result as the client receives it (content,
	// structuredContent, isError, …), raw.
	CallToolResult json.RawMessage
	// IsError is the result's isError.
	IsError bool
	// Err is the failed call's error as the client reads it (code,
	// message, retryable, details, hint); nil when the call succeeded.
	Err *adapter.Error
	// Structured is the result's structuredContent, nil when it has none.
	Structured json.RawMessage
	// RPCError is the JSON-RPC error of a call that failed as a protocol
	// error (an unknown tool, a malformed request), nil otherwise.
	RPCError *wire.RPCError
	// Rows are the audit rows of this call, in the order they were
	// written: a destructive tool's pending row first, then every round's
	// final row.
	Rows []audit.Row
	// Progress are the progress reports the tool made, in order.
	Progress []Progress
	// Rounds is how many rounds the call took (1 without input requests).
	Rounds int
}

// Progress is one progress report of a call.
type Progress struct {
	Progress, Total float64
	Message         string
}

// Output decodes a successful call's structured output into T; a failed
// call fails the test with its error.
func Output[T any](t testing.TB, r *Result) T {
	t.Helper()
	var out T
	switch {
	case r.RPCError != nil:
		t.Fatalf("the call failed with JSON-RPC error %d: %s", r.RPCError.Code, r.RPCError.Message)
	case r.IsError:
		t.Fatalf("the call failed: %v (%s)", r.Err, r.CallToolResult)
	case r.Structured == nil:
		t.Fatalf("the call returned no structured content: %s", r.CallToolResult)
	}
	if err := json.Unmarshal(r.Structured, &out); err != nil {
		t.Fatalf("decoding the output into %T: %v", out, err)
	}
	return out
}

// Code is the failed call's error code ("" when it succeeded).
func (r *Result) Code() adapter.Code {
	if r.Err == nil {
		return ""
	}
	return r.Err.Code
}

// Call calls the function's tool with args (any value that marshals to a
// JSON object) and returns what the client and the audit would see. A
// failure to call at all (args that do not marshal, a broken answer) fails
// the test; a failed call does not.
func (f *Function) Call(t testing.TB, args any, opts ...Option) *Result {
	t.Helper()
	o := callOptions{timeout: 10 * time.Second, caller: &calltoken.Identity{Subject: DefaultSubject, AuthMethod: "jwt", ClientID: "mcpfntest", Issuer: "https://mcpfntest.invalid", Scopes: f.tool.Scopes()}}
	for _, opt := range opts {
		opt(&o)
	}
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatalf("mcpfntest: arguments: %v", err)
	}
	if o.callID == "" {
		o.callID = "mcpfntest-" + rand.Text()
	}
	res := &Result{}
	env := wire.Envelope{
		Version: wire.EnvelopeVersion, CallID: o.callID, SessionID: o.session, TraceHeader: o.trace,
		Params: wire.EnvelopeParams{Name: f.tool.Name(), Arguments: raw, Meta: o.meta},
		MCP: wire.EnvelopeMCP{
			Era: wire.EraModern, Method: "tools/call", ProtocolVersion: wire.ModernProtocolVersion,
			ClientInfo: &wire.ClientInfo{Name: "mcpfntest", Version: "1"}, JSONRPCID: json.RawMessage("1"),
		},
	}
	if o.progress != nil {
		env.Stream = &wire.StreamRequest{Progress: true}
	}
	for round := 1; ; round++ {
		res.Rounds = round
		env.MCP.Round = round
		if o.caller != nil {
			c := *o.caller
			if o.tenant != "" {
				c.Tenant = o.tenant
			}
			tok, err := f.signer.Sign(calltoken.Call{Tool: f.tool.Name(), CallID: env.CallID, Caller: &c, Args: env.Params.Arguments, Expires: time.Now().Add(time.Minute)})
			if err != nil {
				t.Fatalf("mcpfntest: signing: %v", err)
			}
			env.CallToken = tok
		}
		payload, err := json.Marshal(env)
		if err != nil {
			t.Fatalf("mcpfntest: %v", err)
		}
		answer := f.invoke(t, payload, o, res)
		var resp wire.EnvelopeResponse
		if err := json.Unmarshal(answer, &resp); err != nil {
			t.Fatalf("mcpfntest: the function's answer is not an envelope response: %v\n%s", err, answer)
		}
		if resp.Error != nil {
			res.RPCError = resp.Error
			break
		}
		next, more := f.nextRound(t, resp.Result, o, res)
		if !more {
			break
		}
		env.Params.InputResponses, env.Params.RequestState = next.responses, next.state
	}
	res.Rows = f.rows.of(o.callID)
	return res
}

// invoke runs one invocation through the function's entry point: the
// streamed one when the call asked for progress, relaying its frames.
func (f *Function) invoke(t testing.TB, payload []byte, o callOptions, res *Result) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{
		AwsRequestID:       "mcpfntest-" + rand.Text()[:12],
		InvokedFunctionArn: "arn:aws:lambda:us-east-1:000000000000:function:" + f.name,
		TenantID:           o.lambdaTenant,
	})
	//lint:ignore SA1029 the plain string key is the one aws-lambda-go itself sets
	ctx = context.WithValue(ctx, wire.TraceHeaderKey, o.lambdaTrace)
	if o.progress == nil {
		out, err := f.fn.Invoke(ctx, payload)
		if err != nil {
			t.Fatalf("mcpfntest: Invoke: %v", err)
		}
		return out
	}
	body, err := io.ReadAll(f.fn.InvokeStream(ctx, payload))
	if err != nil {
		t.Fatalf("mcpfntest: the streamed answer broke off: %v", err)
	}
	lines := bytes.Split(bytes.TrimRight(body, "\n"), []byte("\n"))
	for _, l := range lines[:len(lines)-1] {
		var fr wire.Frame
		if err := json.Unmarshal(l, &fr); err != nil {
			t.Fatalf("mcpfntest: a stream frame is not JSON: %s", l)
		}
		if fr.Kind == wire.FrameProgress && fr.Progress != nil {
			p := Progress{Progress: *fr.Progress, Message: fr.Message}
			if fr.Total != nil {
				p.Total = *fr.Total
			}
			res.Progress = append(res.Progress, p)
			o.progress(p)
		}
	}
	return lines[len(lines)-1]
}

type round struct {
	responses json.RawMessage
	state     string
}

// nextRound reads one round's result into res; for an input_required result
// it asks the test's answerer and returns the next round's input.
func (f *Function) nextRound(t testing.TB, result json.RawMessage, o callOptions, res *Result) (round, bool) {
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
		res.Err = errorOf(r.Content)
	}
	if r.ResultType != "input_required" {
		return round{}, false
	}
	if o.answer == nil {
		t.Fatalf("mcpfntest: the tool asked for input (%d requests) and the test gave no mcpfntest.Answer", len(r.InputRequests))
	}
	answers := map[string]any{}
	for key, req := range r.InputRequests {
		a, err := o.answer(key, req)
		if err != nil {
			t.Fatalf("mcpfntest: answering %s (%s): %v", key, req.Method, err)
		}
		answers[key] = a
	}
	b, err := json.Marshal(answers)
	if err != nil {
		t.Fatalf("mcpfntest: answers: %v", err)
	}
	return round{responses: b, state: r.RequestState}, true
}

// errorOf decodes the error body of a failed call's text content.
func errorOf(content []json.RawMessage) *adapter.Error {
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
	return adapter.NewError(adapter.CodeInternal, "mcpfntest: a failed call without an mcpfn error body")
}

// memoryRows is an adapter.Recorder that keeps rows in memory, with the
// DynamoDB sink's one rule that matters to a tool: a destructive call's
// pending row is written once per call id, and a later attempt finds it.
type memoryRows struct {
	mu      sync.Mutex
	rows    []audit.Row
	pending map[string]audit.Row
}

func (m *memoryRows) Pending(_ context.Context, row *audit.Row) (*audit.Row, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pending == nil {
		m.pending = map[string]audit.Row{}
	}
	if prior, ok := m.pending[row.CallID]; ok {
		return &prior, nil
	}
	m.pending[row.CallID] = *row
	m.rows = append(m.rows, *row)
	return nil, nil
}

func (m *memoryRows) Record(_ context.Context, row *audit.Row) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rows = append(m.rows, *row)
}

func (m *memoryRows) Late(_ context.Context, row *audit.Row) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rows = append(m.rows, *row)
}

func (m *memoryRows) of(callID string) []audit.Row {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []audit.Row
	for _, r := range m.rows {
		if r.CallID == callID {
			out = append(out, r)
		}
	}
	return out
}

// Rows returns every audit row the function's calls have written so far.
func (f *Function) Rows() []audit.Row {
	f.rows.mu.Lock()
	defer f.rows.mu.Unlock()
	return append([]audit.Row(nil), f.rows.rows...)
}
