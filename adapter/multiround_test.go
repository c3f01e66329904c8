package adapter_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/adapter"
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
	if responses != nil {
		params["inputResponses"] = responses
	}
	if state != "" {
		params["requestState"] = state
	}
	env := map[string]any{"mcpfn": "1", "callId": "c", "params": params,
		"callToken": lambdatest.Token(testFunction, "ask_name", "c", caller, mustJSON(t, args))}
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
