package handlers_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/handlers"
	"github.com/mcpfn/mcpfn/internal/lambdatest"
)

// TestAgentCoreRetryPostsOnce invokes broadcast_create as AgentCore Gateway
// does — bare arguments, tool and ids in the client context — twice with the
// same request and message ids, as AgentCore's retry would, and gets one
// broadcast. Through AgentCore there is no verified caller, so delete fails
// closed.
func TestAgentCoreRetryPostsOnce(t *testing.T) {
	a := newApp(t)
	invoke := func(tool, requestID string, args any) result {
		t.Helper()
		payload, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := lambdatest.Context(context.Background(), lambdatest.Invocation{
			RequestID: "lambda-" + requestID, // differs per attempt; the call id must not
			Timeout:   10 * time.Second,
			Custom: map[string]string{
				"bedrockAgentCoreToolName":       "broadcasts___" + tool,
				"bedrockAgentCoreAwsRequestId":   requestID,
				"bedrockAgentCoreMcpMessageId":   "1",
				"bedrockAgentCoreGatewayId":      "gw-test",
				"bedrockAgentCoreTargetId":       "target-test",
				"bedrockAgentCoreMessageVersion": "1.0",
			},
		})
		defer cancel()
		out, err := a.fns[tool].Invoke(ctx, payload)
		if err != nil {
			t.Fatal(err)
		}
		var tr struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
			StructuredContent json.RawMessage `json:"structuredContent"`
			IsError           bool            `json:"isError"`
		}
		if err := json.Unmarshal(out, &tr); err != nil {
			t.Fatalf("%s: not a CallToolResult: %s", tool, out)
		}
		r := result{IsError: tr.IsError, Structured: tr.StructuredContent}
		if tr.IsError && (len(tr.Content) != 1 || json.Unmarshal([]byte(tr.Content[0].Text), &r.Err) != nil) {
			t.Fatalf("%s: error result without an error body: %s", tool, out)
		}
		return r
	}

	args := map[string]any{"channel": "agents", "text": "posted through AgentCore"}
	first := ok[handlers.CreateOutput](t, invoke(handlers.ToolCreate, "req-1", args))
	retry := ok[handlers.CreateOutput](t, invoke(handlers.ToolCreate, "req-1", args))
	if retry != first {
		t.Fatalf("AgentCore retry got %+v, first attempt %+v", retry, first)
	}
	page := ok[handlers.ListOutput](t, a.call(t, nil, handlers.ToolList, map[string]any{"channel": "agents"}))
	if len(page.Items) != 1 {
		t.Fatalf("%d broadcasts after a retried create", len(page.Items))
	}
	got := ok[handlers.Broadcast](t, invoke(handlers.ToolGet, "req-2", map[string]any{"id": first.ID}))
	if got.Text != "posted through AgentCore" {
		t.Fatalf("get through AgentCore: %+v", got)
	}
	wantCode(t, invoke(handlers.ToolDelete, "req-3", map[string]any{"id": first.ID}), adapter.CodeUnauthorized)
}
