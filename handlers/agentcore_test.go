package handlers_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/handlers"
	"github.com/mcpfn/mcpfn/mcpfntest"
	"github.com/mcpfn/mcpfn/wire"
)

// TestAgentCoreRetryPostsOnce invokes broadcast_create as AgentCore Gateway
// does — bare arguments, tool and ids in the client context — twice with the
// same request and message ids, as AgentCore's retry would, and gets one
// broadcast. Through AgentCore there is no verified caller, so delete fails
// closed.
func TestAgentCoreRetryPostsOnce(t *testing.T) {
	a := newApp(t)
	// AgentCore Gateway invokes the function directly: the kit's gateway
	// path is not this one, so the functions are the adapter's own.
	fns := map[string]*adapter.Function{}
	for _, tool := range handlers.Tools(a.store) {
		fns[tool.Name()] = adapter.New(tool)
	}
	invoke := func(tool, requestID string, args any) *mcpfntest.Result {
		t.Helper()
		payload, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{
			AwsRequestID: "lambda-" + requestID, // differs per attempt; the call id must not
			ClientContext: lambdacontext.ClientContext{Custom: map[string]string{
				"bedrockAgentCoreToolName":       "broadcasts___" + tool,
				"bedrockAgentCoreAwsRequestId":   requestID,
				"bedrockAgentCoreMcpMessageId":   "1",
				"bedrockAgentCoreGatewayId":      "gw-test",
				"bedrockAgentCoreTargetId":       "target-test",
				"bedrockAgentCoreMessageVersion": "1.0",
			}},
		})
		out, err := fns[tool].Invoke(ctx, payload)
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
		r := &mcpfntest.Result{CallToolResult: out, IsError: tr.IsError, Structured: tr.StructuredContent}
		if tr.IsError {
			var body wire.ErrorBody
			if len(tr.Content) != 1 || json.Unmarshal([]byte(tr.Content[0].Text), &body) != nil {
				t.Fatalf("%s: error result without an error body: %s", tool, out)
			}
			r.Err = &adapter.Error{Code: adapter.Code(body.Error), Message: body.Message, Retryable: body.Retryable, Details: body.Details, Hint: body.Hint}
		}
		return r
	}

	args := map[string]any{"channel": "agents", "text": "posted through AgentCore"}
	first := mcpfntest.Output[handlers.CreateOutput](t, invoke(handlers.ToolCreate, "req-1", args))
	retry := mcpfntest.Output[handlers.CreateOutput](t, invoke(handlers.ToolCreate, "req-1", args))
	if retry != first {
		t.Fatalf("AgentCore retry got %+v, first attempt %+v", retry, first)
	}
	page := mcpfntest.Output[handlers.ListOutput](t, a.call(t, handlers.ToolList, map[string]any{"channel": "agents"}, anonymous))
	if len(page.Items) != 1 {
		t.Fatalf("%d broadcasts after a retried create", len(page.Items))
	}
	got := mcpfntest.Output[handlers.Broadcast](t, invoke(handlers.ToolGet, "req-2", map[string]any{"id": first.ID}))
	if got.Text != "posted through AgentCore" {
		t.Fatalf("get through AgentCore: %+v", got)
	}
	wantCode(t, invoke(handlers.ToolDelete, "req-3", map[string]any{"id": first.ID}), adapter.CodeUnauthorized)
}
