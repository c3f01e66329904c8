package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/mcpfn/mcpfn/adapter"
)

// The multi-round fixtures (SEP-2322): tools that answer a first call with
// an input_required result and complete once the client sends the answers.
// Each round is its own Lambda invocation, possibly on another execution
// environment; what a tool remembers travels in its sealed request state.
const (
	ToolIRElicitation  = "test_input_required_result_elicitation"
	ToolIRSampling     = "test_input_required_result_sampling"
	ToolIRListRoots    = "test_input_required_result_list_roots"
	ToolIRRequestState = "test_input_required_result_request_state"
	ToolIRMultiple     = "test_input_required_result_multiple_inputs"
	ToolIRMultiRound   = "test_input_required_result_multi_round"
	ToolIRTampered     = "test_input_required_result_tampered_state"
	ToolIRCapabilities = "test_input_required_result_capabilities"
)

func elicit(message, property, typ string) adapter.InputRequest {
	return adapter.InputRequest{Method: "elicitation/create", Params: map[string]any{
		"message": message,
		"requestedSchema": map[string]any{
			"type":       "object",
			"properties": map[string]any{property: map[string]any{"type": typ}},
			"required":   []string{property},
		},
	}}
}

func sample(text string, maxTokens int) adapter.InputRequest {
	return adapter.InputRequest{Method: "sampling/createMessage", Params: map[string]any{
		"messages":  []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": text}}},
		"maxTokens": maxTokens,
	}}
}

var listRoots = adapter.InputRequest{Method: "roots/list", Params: map[string]any{}}

// multiRound defines a no-argument fixture whose handler sees the call's
// input responses and request state.
func multiRound(name, description string, h func(c *adapter.Call) (adapter.Content, error)) *adapter.Tool {
	return adapter.MustDefine(adapter.ToolDef[none, adapter.Content]{
		Name:        name,
		Description: description,
		Handler: func(_ context.Context, c *adapter.Call, _ none) (adapter.Content, error) {
			return h(c)
		},
	})
}

// answered reports whether every id has a response.
func answered(c *adapter.Call, ids ...string) bool {
	for _, id := range ids {
		if _, ok := c.InputResponses()[id]; !ok {
			return false
		}
	}
	return true
}

// field reads content.<name> of an elicitation result, or the text of a
// sampling result.
func field(raw json.RawMessage, name string) string {
	var r struct {
		Content map[string]any `json:"content"`
	}
	if json.Unmarshal(raw, &r) == nil {
		if v, ok := r.Content[name]; ok {
			return fmt.Sprint(v)
		}
		if t, ok := r.Content["text"].(string); ok {
			return t
		}
	}
	return ""
}

func text(s string) adapter.Content { return adapter.Content{Blocks: []adapter.Block{adapter.Text(s)}} }

// IRElicitation asks for the user's name, then greets.
func IRElicitation() *adapter.Tool {
	return multiRound(ToolIRElicitation, "Asks the user's name (elicitation), then greets.", func(c *adapter.Call) (adapter.Content, error) {
		if !answered(c, "user_name") {
			return adapter.Content{}, adapter.RequireInput(map[string]adapter.InputRequest{
				"user_name": elicit("What is your name?", "name", "string"),
			}, "")
		}
		return text("Hello, " + field(c.InputResponses()["user_name"], "name") + "!"), nil
	})
}

// IRSampling asks the client's model a question, then relays the answer.
func IRSampling() *adapter.Tool {
	return multiRound(ToolIRSampling, "Asks the client's model a question (sampling), then relays the answer.", func(c *adapter.Call) (adapter.Content, error) {
		if !answered(c, "capital_question") {
			return adapter.Content{}, adapter.RequireInput(map[string]adapter.InputRequest{
				"capital_question": sample("What is the capital of France?", 100),
			}, "")
		}
		return text("The model said: " + field(c.InputResponses()["capital_question"], "text")), nil
	})
}

// IRListRoots asks for the client's roots, then lists them.
func IRListRoots() *adapter.Tool {
	return multiRound(ToolIRListRoots, "Asks for the client's roots, then lists them.", func(c *adapter.Call) (adapter.Content, error) {
		raw, ok := c.InputResponses()["client_roots"]
		if !ok {
			return adapter.Content{}, adapter.RequireInput(map[string]adapter.InputRequest{"client_roots": listRoots}, "")
		}
		var r struct {
			Roots []struct {
				URI string `json:"uri"`
			} `json:"roots"`
		}
		_ = json.Unmarshal(raw, &r)
		var uris []string
		for _, root := range r.Roots {
			uris = append(uris, root.URI)
		}
		return text("Roots: " + strings.Join(uris, ", ")), nil
	})
}

// IRRequestState carries a state through the client and checks it came back.
func IRRequestState() *adapter.Tool {
	const state = "awaiting-confirm"
	return multiRound(ToolIRRequestState, "Asks for a confirmation, carrying its state through the client.", func(c *adapter.Call) (adapter.Content, error) {
		if !answered(c, "confirm") {
			return adapter.Content{}, adapter.RequireInput(map[string]adapter.InputRequest{
				"confirm": elicit("Please confirm", "ok", "boolean"),
			}, state)
		}
		if c.RequestState() != state {
			return adapter.Content{}, adapter.NewError(adapter.CodeBadRequest, "the request state did not come back")
		}
		return text("state-ok: confirmed"), nil
	})
}

// IRMultiple asks for three inputs at once.
func IRMultiple() *adapter.Tool {
	return multiRound(ToolIRMultiple, "Asks for a name, a greeting and the roots in one round.", func(c *adapter.Call) (adapter.Content, error) {
		ids := []string{"user_name", "greeting", "client_roots"}
		if !answered(c, ids...) || c.RequestState() != "multi" {
			return adapter.Content{}, adapter.RequireInput(map[string]adapter.InputRequest{
				"user_name":    elicit("What is your name?", "name", "string"),
				"greeting":     sample("Generate a greeting", 50),
				"client_roots": listRoots,
			}, "multi")
		}
		return text("Got " + strings.Join(ids, ", ") + " for " + field(c.InputResponses()["user_name"], "name")), nil
	})
}

// IRMultiRound needs two rounds of input; round 2's state remembers round 1.
func IRMultiRound() *adapter.Tool {
	return multiRound(ToolIRMultiRound, "Asks two questions in two rounds.", func(c *adapter.Call) (adapter.Content, error) {
		state := c.RequestState()
		switch {
		case state == "round1" && answered(c, "step1"):
			return adapter.Content{}, adapter.RequireInput(map[string]adapter.InputRequest{
				"step2": elicit("Step 2: What is your favorite color?", "color", "string"),
			}, "round2:"+field(c.InputResponses()["step1"], "name"))
		case strings.HasPrefix(state, "round2:") && answered(c, "step2"):
			name := strings.TrimPrefix(state, "round2:")
			return text(name + " likes " + field(c.InputResponses()["step2"], "color")), nil
		}
		// A first call, or answers that do not fit the state: start over.
		return adapter.Content{}, adapter.RequireInput(map[string]adapter.InputRequest{
			"step1": elicit("Step 1: What is your name?", "name", "string"),
		}, "round1")
	})
}

// IRTampered seals a state; the adapter refuses it when it comes back changed.
func IRTampered() *adapter.Tool {
	return multiRound(ToolIRTampered, "Carries a sealed state; a tampered one is refused.", func(c *adapter.Call) (adapter.Content, error) {
		if c.RequestState() == "" {
			return adapter.Content{}, adapter.RequireInput(map[string]adapter.InputRequest{
				"confirm": elicit("Please confirm", "ok", "boolean"),
			}, "sealed")
		}
		return text("state verified"), nil
	})
}

// IRCapabilities asks only for input the client declared it can give.
func IRCapabilities() *adapter.Tool {
	return multiRound(ToolIRCapabilities, "Asks only for input the client's capabilities allow.", func(c *adapter.Call) (adapter.Content, error) {
		caps := c.ClientCapabilities()
		if len(c.InputResponses()) > 0 {
			ids := make([]string, 0, len(c.InputResponses()))
			for id := range c.InputResponses() {
				ids = append(ids, id)
			}
			sort.Strings(ids)
			return text("answered: " + strings.Join(ids, ", ")), nil
		}
		requests := map[string]adapter.InputRequest{}
		if _, ok := caps["elicitation"]; ok {
			requests["user_name"] = elicit("What is your name?", "name", "string")
		}
		if _, ok := caps["sampling"]; ok {
			requests["greeting"] = sample("Generate a greeting", 50)
		}
		if _, ok := caps["roots"]; ok {
			requests["client_roots"] = listRoots
		}
		if len(requests) == 0 {
			return text("the client declared no capability this tool can ask through"), nil
		}
		return adapter.Content{}, adapter.RequireInput(requests, "")
	})
}
