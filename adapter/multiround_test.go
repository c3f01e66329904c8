package adapter_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/calltoken"
	"github.com/mcpfn/mcpfn/internal/lambdatest"
	"github.com/mcpfn/mcpfn/wire"
)

// askName is a two-round tool: round 1 asks the user's name and carries the
// greeting style in the request state; round 2 answers.
func askName(t testing.TB) *adapter.Tool {
	return adapter.MustDefine(adapter.ToolDef[struct {
		Style string `json:"style,omitempty"`
	}, widgetOut]{
		Name: "ask_name",
		Handler: func(_ context.Context, c *adapter.Call, in struct {
			Style string `json:"style,omitempty"`
		}) (widgetOut, error) {
			answer, ok := c.InputResponses()["user_name"]
			if !ok {
				return widgetOut{}, adapter.RequireInput(map[string]adapter.InputRequest{
					"user_name": {Method: "elicitation/create", Params: map[string]any{
						"message":         "What is your name?",
						"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}},
					}},
				}, "style="+in.Style)
			}
			var r struct {
				Content struct {
					Name string `json:"name"`
				} `json:"content"`
			}
			if err := json.Unmarshal(answer, &r); err != nil {
				return widgetOut{}, adapter.NewError(adapter.CodeValidation, "bad answer")
			}
			return widgetOut{EntityID: c.RequestState() + " name=" + r.Content.Name}, nil
		},
	})
}

type roundResult struct {
	ResultType        string                     `json:"resultType"`
	InputRequests     map[string]json.RawMessage `json:"inputRequests"`
	RequestState      string                     `json:"requestState"`
	StructuredContent json.RawMessage            `json:"structuredContent"`
	IsError           bool                       `json:"isError"`
}

func round(t *testing.T, fn *adapter.Function, caller *adapter.Identity, args any, responses map[string]any, state string) (roundResult, *wire.RPCError) {
	t.Helper()
	params := map[string]any{"name": "ask_name", "arguments": args}
	var responsesJSON []byte
	if responses != nil {
		params["inputResponses"] = responses
		responsesJSON = mustJSON(t, responses)
	}
	if state != "" {
		params["requestState"] = state
	}
	// Signed as the gateway signs what the client sent, the round included.
	tok, err := lambdatest.Signer(map[string]string{"ask_name": testFunction}).Sign(calltoken.Call{
		Tool: "ask_name", CallID: "c", Caller: caller, Args: mustJSON(t, args), Expires: time.Now().Add(time.Minute),
		InputResponses: responsesJSON, RequestState: state,
	})
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]any{"mcpfn": "1", "callId": "c", "params": params, "callToken": tok}
	raw := invoke(t, fn, mustJSON(t, env), lambdaInvoke{})
	var resp struct {
		Result roundResult    `json:"result"`
		Error  *wire.RPCError `json:"error"`
	}
	if err := json.Unmarshal(raw, &resp); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	return resp.Result, resp.Error
}

func TestMultiRoundCall(t *testing.T) {
	rec := newRecorder()
	var outcomes []string
	fn := newFunction(askName(t), adapter.WithRequestStateKey([]byte("0123456789abcdef0123456789abcdef")), adapter.WithHooks(rec.hooks(), adapter.Hooks{
		AfterToolCall: func(_ context.Context, c *adapter.Call, _ *adapter.Outcome) {
			outcomes = append(outcomes, c.MCP.Outcome)
		},
	}))
	first, rpcErr := round(t, fn, alice, map[string]any{"style": "warm"}, nil, "")
	if rpcErr != nil || first.ResultType != "input_required" || first.InputRequests["user_name"] == nil || first.RequestState == "" {
		t.Fatalf("round 1: %+v %+v", first, rpcErr)
	}
	if first.RequestState == "style=warm" || !strings.Contains(first.RequestState, ".") {
		t.Fatalf("the state must travel sealed, got %q", first.RequestState)
	}
	got := rec.only(t)
	if got.Err != nil || got.Stage != adapter.StageDone {
		t.Fatalf("an input_required round is not a failure: %+v", got)
	}
	for _, ev := range got.Events {
		if strings.HasPrefix(ev, "OnToolError") {
			t.Fatalf("OnToolError fired for an input request: %v", got.Events)
		}
	}

	second, rpcErr := round(t, fn, alice, map[string]any{"style": "warm"},
		map[string]any{"user_name": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}}, first.RequestState)
	if rpcErr != nil || second.ResultType != "" || string(second.StructuredContent) != `{"entityId":"style=warm name=Ada"}` {
		t.Fatalf("round 2: %+v %+v", second, rpcErr)
	}
	if len(outcomes) != 2 || outcomes[0] != "input_required" || outcomes[1] != "complete" {
		t.Fatalf("MCP outcomes %v", outcomes)
	}

	answer := map[string]any{"user_name": map[string]any{"action": "accept", "content": map[string]any{"name": "Eve"}}}
	for name, tc := range map[string]struct {
		caller *adapter.Identity
		state  string
	}{
		"tampered":       {alice, first.RequestState[:len(first.RequestState)-2] + "xx"},
		"another caller": {&adapter.Identity{Subject: "mallory", AuthMethod: "jwt"}, first.RequestState},
		"no caller":      {nil, first.RequestState},
		"not sealed":     {alice, "style=admin"},
	} {
		_, rpcErr := round(t, fn, tc.caller, map[string]any{}, answer, tc.state)
		if rpcErr == nil || rpcErr.Code != wire.RPCInvalidParams || !strings.Contains(rpcErr.Message, "integrity") {
			t.Errorf("%s state: want an invalid-params error, got %+v", name, rpcErr)
		}
	}

	// Another function (another key) refuses this one's state.
	other := newFunction(askName(t), adapter.WithRequestStateKey([]byte("another key, another function....")))
	if _, rpcErr := round(t, other, alice, map[string]any{}, answer, first.RequestState); rpcErr == nil {
		t.Error("a state sealed with another key was accepted")
	}

	if _, rpcErr := round(t, fn, alice, map[string]any{}, map[string]any{"user_name": 12345}, ""); rpcErr == nil || !strings.Contains(rpcErr.Message, "result object") {
		t.Errorf("malformed inputResponses: %+v", rpcErr)
	}
}

// A captured retry envelope cannot have its client's answer swapped (nor
// dropped, nor its state changed) under the same call token: the token
// binds the round, and the function refuses the altered envelope before
// the handler sees the answer.
func TestCapturedRoundCannotSwapTheAnswer(t *testing.T) {
	ran := 0
	fn := newFunction(askName(t), adapter.WithRequestStateKey([]byte("0123456789abcdef0123456789abcdef")), adapter.WithHooks(adapter.Hooks{
		BeforeHandle: func(context.Context, *adapter.Call) error { ran++; return nil },
	}))
	args := map[string]any{"style": "warm"}
	first, rpcErr := round(t, fn, alice, args, nil, "")
	if rpcErr != nil || first.RequestState == "" {
		t.Fatalf("round 1: %+v %+v", first, rpcErr)
	}
	ada := json.RawMessage(`{"user_name":{"action":"accept","content":{"name":"Ada"}}}`)
	tok, err := lambdatest.Signer(map[string]string{"ask_name": testFunction}).Sign(calltoken.Call{
		Tool: "ask_name", CallID: "c", Caller: alice, Args: mustJSON(t, args), Expires: time.Now().Add(time.Minute),
		InputResponses: ada, RequestState: first.RequestState,
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, params := range map[string]map[string]any{
		"another answer": {"inputResponses": json.RawMessage(`{"user_name":{"action":"accept","content":{"name":"Eve"}}}`), "requestState": first.RequestState},
		"answer dropped": {"requestState": first.RequestState},
		"state dropped":  {"inputResponses": ada},
	} {
		t.Run(name, func(t *testing.T) {
			ran = 0
			params["name"], params["arguments"] = "ask_name", args
			raw := invoke(t, fn, mustJSON(t, map[string]any{"mcpfn": "1", "callId": "c", "params": params, "callToken": tok}), lambdaInvoke{})
			res, rpcErr := envelopeResult(t, raw)
			if rpcErr != nil {
				t.Fatalf("protocol error %+v", rpcErr)
			}
			if b := res.errorBody(t); b.Error != "UNAUTHORIZED" || !strings.Contains(string(b.Details), string(calltoken.ReasonRound)) {
				t.Fatalf("answer = %+v; want UNAUTHORIZED %s", b, calltoken.ReasonRound)
			}
			if ran != 0 {
				t.Fatal("the handler ran with the altered round")
			}
		})
	}
}
