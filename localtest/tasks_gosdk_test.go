package localtest_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/localtest/conformance"
)

// sdkConn is a go-sdk Streamable HTTP client connection to the stack's JWT
// gateway. go-sdk v1.8 has no Tasks API (its CallToolResult drops a task
// id), so the task's requests are JSON-RPC messages written and read on the
// SDK's own transport: the SDK's HTTP, headers and SSE handling, the
// extension's messages.
type sdkConn struct {
	conn mcp.Connection
	id   int64
}

func (c *sdkConn) call(t *testing.T, method string, params map[string]any) map[string]any {
	t.Helper()
	c.id++
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "mcpfn-tasks-gosdk", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{tasksExtension: map[string]any{}}},
	}
	raw, _ := json.Marshal(params)
	id, _ := jsonrpc.MakeID(float64(c.id))
	if err := c.conn.Write(t.Context(), &jsonrpc.Request{ID: id, Method: method, Params: raw}); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	for {
		msg, err := c.conn.Read(t.Context())
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		resp, ok := msg.(*jsonrpc.Response)
		if !ok || resp.ID != id {
			continue // a notification on the request's stream
		}
		if resp.Error != nil {
			t.Fatalf("%s: %v", method, resp.Error)
		}
		var res map[string]any
		if err := json.Unmarshal(resp.Result, &res); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		return res
	}
}

// taskNameHeader is the part of the Tasks extension go-sdk v1.8 does not
// know: a tasks/* request's Mcp-Name header is its params.taskId (the SDK
// sets Mcp-Method for every request, Mcp-Name only for the methods of the
// base protocol).
type taskNameHeader struct{ next http.RoundTripper }

func (h taskNameHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasPrefix(r.Header.Get("Mcp-Method"), "tasks/") && r.Body != nil {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		var msg struct {
			Params struct {
				TaskID string `json:"taskId"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &msg)
		r = r.Clone(r.Context())
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.Header.Set("Mcp-Name", msg.Params.TaskID)
	}
	return h.next.RoundTrip(r)
}

// TestTaskThroughTheGoSDKTransport: a task created, polled to its end and
// its result fetched by a go-sdk client connection through the JWT
// gateway.
func TestTaskThroughTheGoSDKTransport(t *testing.T) {
	token, err := stack.MintToken(map[string]any{"sub": unique("gosdk-task"), "scope": demoScope})
	if err != nil {
		t.Fatal(err)
	}
	tr := &mcp.StreamableClientTransport{Endpoint: stack.MCPURL(), HTTPClient: &http.Client{Transport: taskNameHeader{bearer{token}}, Timeout: time.Minute}}
	conn, err := tr.Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := &sdkConn{conn: conn}
	label := unique("gosdk")
	created := c.call(t, "tools/call", map[string]any{"name": conformance.ToolSlowCompute, "arguments": map[string]any{"seconds": 1, "label": label}})
	id, _ := created["taskId"].(string)
	if created["resultType"] != "task" || id == "" {
		t.Fatalf("tools/call with the tasks extension answered %v, want a CreateTaskResult", created)
	}
	for giveUp := time.Now().Add(time.Minute); ; { // a safety net, not a timing assertion
		task := c.call(t, "tasks/get", map[string]any{"taskId": id})
		if task["status"] == "completed" {
			if b, _ := json.Marshal(task["result"]); !strings.Contains(string(b), label) {
				t.Errorf("the completed task's result %s does not carry the answer", b)
			}
			return
		}
		if task["status"] != "working" || time.Now().After(giveUp) {
			t.Fatalf("task %s: %v", id, task)
		}
		time.Sleep(pollInterval(task))
	}
}
