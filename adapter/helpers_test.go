package adapter_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/internal/lambdatest"
	"github.com/mcpfn/mcpfn/wire"
)

// The test tool set: widgets, a domain that is not the demo's. One tool whose
// input selects every path a handler can take.

type widgetIn struct {
	EntityID string `json:"entityId" jsonschema:"the widget acted on"`
	SleepMs  int    `json:"sleepMs,omitempty" jsonschema:"how long the handler sleeps"`
	Fail     string `json:"fail,omitempty" jsonschema:"how the handler fails: app, raw, wrapped, panic, ignore-ctx"`
	Note     string `json:"note,omitempty"`
}

type widgetOut struct {
	EntityID string `json:"entityId"`
	Caller   string `json:"caller,omitempty"`
}

// errSecret is an unexpected error whose message must never reach a caller.
var errSecret = errors.New("dial tcp postgres://admin:hunter2@10.0.0.5:5432: connection refused")

func widgetHandler(ctx context.Context, call *adapter.Call, in widgetIn) (widgetOut, error) {
	call.SetDimension("entityId", in.EntityID)
	if in.SleepMs > 0 {
		t := time.NewTimer(time.Duration(in.SleepMs) * time.Millisecond)
		defer t.Stop()
		if in.Fail == "ignore-ctx" {
			<-t.C
		} else {
			select {
			case <-t.C:
			case <-ctx.Done():
				return widgetOut{}, ctx.Err()
			}
		}
	}
	switch in.Fail {
	case "app":
		return widgetOut{}, adapter.NewError(adapter.CodeConflict, "widget "+in.EntityID+" is locked").WithHint("retry later")
	case "raw":
		return widgetOut{}, errSecret
	case "wrapped":
		return widgetOut{}, fmt.Errorf("updating widget %s: %w", in.EntityID, errSecret)
	case "panic":
		panic("widget exploded: " + in.EntityID)
	}
	out := widgetOut{EntityID: in.EntityID}
	if call.Caller() != nil {
		out.Caller = call.Caller().Subject
	}
	return out, nil
}

func widgetDef() adapter.ToolDef[widgetIn, widgetOut] {
	return adapter.ToolDef[widgetIn, widgetOut]{
		Name:        "widget_update",
		Title:       "Update a widget",
		Description: "Updates one widget.",
		Idempotent:  true,
		Handler:     widgetHandler,
	}
}

func widgetTool(t testing.TB, mod ...func(*adapter.ToolDef[widgetIn, widgetOut])) *adapter.Tool {
	t.Helper()
	d := widgetDef()
	for _, m := range mod {
		m(&d)
	}
	tool, err := adapter.Define(d)
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

// quietLogger keeps swallowed-hook logs out of test output.
func quietLogger() adapter.Option {
	return adapter.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// lambdaInvoke describes one invocation the way the Lambda Runtime API does.
type lambdaInvoke struct {
	RequestID string
	Trace     string        // the Lambda-Runtime-Trace-Id header
	Timeout   time.Duration // deadline from now (default 10 s)
	Custom    map[string]string
	Tenant    string
}

// invoke calls fn through aws-lambda-go's own handler wrapper with a context
// built as its runtime loop builds it (lambdacontext, the x-amzn-trace-id
// value, the deadline): the path a deployed function takes.
func invoke(t testing.TB, fn *adapter.Function, payload []byte, li lambdaInvoke) []byte {
	t.Helper()
	if li.RequestID == "" {
		li.RequestID = fmt.Sprintf("req-%d", time.Now().UnixNano())
	}
	if li.Timeout == 0 {
		li.Timeout = 10 * time.Second
	}
	ctx, cancel := lambdatest.Context(context.Background(), lambdatest.Invocation{
		RequestID:   li.RequestID,
		FunctionARN: "arn:aws:lambda:us-east-1:123456789012:function:widget",
		Trace:       li.Trace,
		Timeout:     li.Timeout,
		Custom:      li.Custom,
		TenantID:    li.Tenant,
	})
	defer cancel()
	out, err := lambda.NewHandler(fn).Invoke(ctx, payload)
	if err != nil {
		t.Fatalf("Invoke returned a Lambda function error (the adapter must answer every payload): %v", err)
	}
	return out
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// testFunction is the function name every test function verifies call
// tokens for.
const testFunction = "widget"

// newFunction is adapter.New with the test function's call-token verifier,
// as Start gives a deployed function its own.
func newFunction(tool *adapter.Tool, opts ...adapter.Option) *adapter.Function {
	return adapter.New(tool, append([]adapter.Option{adapter.WithCallVerifier(lambdatest.Verifier(testFunction))}, opts...)...)
}

// envelopeOf builds an mcpfn envelope for a tools/call of tool, signed as
// the gateway signs it, carrying caller (nil: none verified).
func envelopeOf(t testing.TB, callID, tool string, args any, caller *adapter.Identity) []byte {
	t.Helper()
	argsJSON := mustJSON(t, args)
	env := wire.Envelope{
		Version:   wire.EnvelopeVersion,
		CallID:    callID,
		Params:    wire.EnvelopeParams{Name: tool, Arguments: argsJSON},
		MCP:       wire.EnvelopeMCP{Era: adapter.EraModern, Method: "tools/call", ProtocolVersion: "2026-07-28"},
		CallToken: lambdatest.Token(testFunction, tool, callID, caller, argsJSON),
	}
	return mustJSON(t, env)
}

// signedRaw is an envelope around raw argument JSON (which may be anything),
// with a call token that binds exactly those bytes.
func signedRaw(t testing.TB, callID, tool, args string) []byte {
	t.Helper()
	tok := lambdatest.Token(testFunction, tool, callID, nil, []byte(args))
	return []byte(`{"mcpfn":"1","callId":"` + callID + `","params":{"name":"` + tool + `","arguments":` + args + `},"callToken":"` + tok + `"}`)
}

// callResult is a decoded CallToolResult.
type callResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
}

// errBody is the JSON a model reads in an error result.
type errBody struct {
	Error     string          `json:"error"`
	Message   string          `json:"message"`
	Retryable bool            `json:"retryable"`
	Details   json.RawMessage `json:"details"`
	Hint      string          `json:"hint"`
}

func (r callResult) errorBody(t testing.TB) errBody {
	t.Helper()
	if !r.IsError || len(r.Content) != 1 {
		t.Fatalf("want an error result with one content item, got %+v", r)
	}
	var b errBody
	if err := json.Unmarshal([]byte(r.Content[0].Text), &b); err != nil {
		t.Fatalf("error content is not the JSON error body: %v (%q)", err, r.Content[0].Text)
	}
	return b
}

// envelopeResult decodes a function's answer to an envelope.
func envelopeResult(t testing.TB, raw []byte) (callResult, *wire.RPCError) {
	t.Helper()
	var resp struct {
		Version string          `json:"mcpfn"`
		CallID  string          `json:"callId"`
		Result  json.RawMessage `json:"result"`
		Error   *wire.RPCError  `json:"error"`
	}
	if err := json.Unmarshal(raw, &resp); err != nil {
		t.Fatalf("response is not an envelope response: %v: %s", err, raw)
	}
	if resp.Version != wire.EnvelopeVersion {
		t.Fatalf("response version %q: %s", resp.Version, raw)
	}
	if resp.Error != nil {
		return callResult{}, resp.Error
	}
	var r callResult
	if err := json.Unmarshal(resp.Result, &r); err != nil {
		t.Fatalf("result is not a CallToolResult: %v: %s", err, raw)
	}
	return r, nil
}

// observed is what the hooks saw of one call.
type observed struct {
	CallID     string
	Dimensions map[string]string
	Caller     *adapter.Identity
	Trace      adapter.Trace
	Err        error
	Public     *adapter.Error
	Stage      adapter.Stage
	Events     []string
	Output     any
	Arguments  string
}

// recorder is a hook set that records every call's hook events and outcome.
type recorder struct {
	mu     sync.Mutex
	events map[*adapter.Call][]string
	done   []observed
}

func newRecorder() *recorder { return &recorder{events: map[*adapter.Call][]string{}} }

func (r *recorder) note(c *adapter.Call, ev string) {
	r.mu.Lock()
	r.events[c] = append(r.events[c], ev)
	r.mu.Unlock()
}

func (r *recorder) hooks() adapter.Hooks {
	return adapter.Hooks{
		BeforeToolCall: func(_ context.Context, c *adapter.Call, _ json.RawMessage) (json.RawMessage, error) {
			r.note(c, "BeforeToolCall")
			return nil, nil
		},
		BeforeHandle: func(_ context.Context, c *adapter.Call) error { r.note(c, "BeforeHandle"); return nil },
		AfterHandle: func(_ context.Context, c *adapter.Call, _ any) (any, error) {
			r.note(c, "AfterHandle")
			return nil, nil
		},
		OnToolError: func(_ context.Context, c *adapter.Call, err error) { r.note(c, "OnToolError:"+err.Error()) },
		AfterToolCall: func(_ context.Context, c *adapter.Call, out *adapter.Outcome) {
			r.note(c, "AfterToolCall")
			r.mu.Lock()
			defer r.mu.Unlock()
			r.done = append(r.done, observed{
				CallID: c.ID, Dimensions: c.Dimensions(), Caller: c.Caller(), Trace: c.Trace(),
				Err: out.Err, Public: out.Public, Stage: out.Stage, Events: r.events[c], Output: out.Output,
				Arguments: string(c.Arguments),
			})
		},
	}
}

// only returns the single call recorded, failing otherwise.
func (r *recorder) only(t testing.TB) observed {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.done) != 1 {
		t.Fatalf("AfterToolCall fired %d times, want exactly 1", len(r.done))
	}
	return r.done[0]
}

// listing is tool's tools/list entry; a tool whose schemas do not marshal
// fails the test.
func listing(t testing.TB, tool *adapter.Tool) adapter.Listing {
	t.Helper()
	l, err := tool.Listing()
	if err != nil {
		t.Fatal(err)
	}
	return l
}
