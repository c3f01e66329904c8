package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// statusCase is one request and the answer the protocol revision's table
// gives it: the JSON-RPC error code and the HTTP status it goes out with.
type statusCase struct {
	name   string
	method string
	params map[string]any
	// meta is the request's _meta (nil: none); header overrides the
	// headers the era sets (a nil value removes one).
	meta   map[string]any
	header http.Header
	code   int
	status int
}

// modernMeta is a complete 2026-07-28 _meta; declare adds the Tasks
// extension to its capabilities.
func modernMeta(declare bool) map[string]any {
	caps := map[string]any{}
	if declare {
		caps["extensions"] = map[string]any{TasksExtension: map[string]any{}}
	}
	return map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "status-test", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": caps,
	}
}

// without is m without key.
func without(m map[string]any, key string) map[string]any {
	c := map[string]any{}
	for k, v := range m {
		if k != key {
			c[k] = v
		}
	}
	return c
}

// sendCase posts one request of c in the era of version (its
// Mcp-Protocol-Version header; the 2026-07-28 routing headers too) and
// returns the HTTP status and the JSON-RPC error code of the answer (0 for
// a result; -1 for a body that is not a JSON-RPC response).
func (e *env) sendCase(t *testing.T, version string, id int, c statusCase) (status, code int, body string) {
	t.Helper()
	params := map[string]any{}
	for k, v := range c.params {
		params[k] = v
	}
	if c.meta != nil {
		params["_meta"] = c.meta
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": c.method, "params": params})
	h := bearer(e.alice(t))
	h.Set("Mcp-Protocol-Version", version)
	if version >= "2026-07-28" {
		h.Set("Mcp-Method", c.method)
		for _, k := range []string{"name", "taskId"} {
			if n, ok := params[k].(string); ok {
				h.Set("Mcp-Name", n)
			}
		}
	}
	for k, vs := range c.header {
		if vs == nil {
			h.Del(k)
			continue
		}
		h[k] = vs
	}
	resp, raw := e.post(t, string(b), h)
	text := string(raw)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// The answer is the last data line of the stream.
		for line := range strings.SplitSeq(text, "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				text = d
			}
		}
	}
	var m struct {
		ID    json.RawMessage `json:"id"`
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
		Result json.RawMessage `json:"result"`
	}
	switch {
	case json.Unmarshal([]byte(text), &m) != nil || (m.Error == nil && m.Result == nil):
		return resp.StatusCode, -1, string(raw)
	case string(m.ID) != fmt.Sprint(id):
		t.Errorf("%s: the answer's id is %s, want %d", c.name, m.ID, id)
	}
	if m.Error == nil {
		return resp.StatusCode, 0, text
	}
	return resp.StatusCode, m.Error.Code, text
}

// TestErrorStatusByRevision: every JSON-RPC error answering a request goes
// out with the HTTP status of its revision's table, whichever part of the
// gateway answers it (the go-sdk, the tasks code, the gateway's own
// refusals). 2026-07-28: -32020, -32021, -32022 and a -32602 for a missing
// required _meta field on 400, -32601 on 404, any other error on 200;
// 2025-11-25 and earlier: a request's JSON-RPC answer on 200, error or not.
func TestErrorStatusByRevision(t *testing.T) {
	e := newEnv(t, withTasks(t, newJobs()))
	unknownTask := map[string]any{"taskId": "AAAAAAAAAAAAAAAAAAAAAA"}
	modern := []statusCase{
		{name: "tools/call of an unknown tool", method: "tools/call", params: map[string]any{"name": "no_such_tool"}, meta: modernMeta(false), code: -32602, status: 200},
		{name: "tools/call of an unknown tool, answered on SSE", method: "tools/call", params: map[string]any{"name": "no_such_tool"},
			meta: func() map[string]any { m := modernMeta(false); m["progressToken"] = "p1"; return m }(), code: -32602, status: 200},
		{name: "tools/call of a task-required tool, undeclared", method: "tools/call", params: map[string]any{"name": requiredTool, "arguments": map[string]any{"entityId": "s"}}, meta: modernMeta(false), code: -32021, status: 400},
		{name: "tools/call with a foreign Mcp-Name", method: "tools/call", params: map[string]any{"name": "echo_call"}, meta: modernMeta(false), header: http.Header{"Mcp-Name": {"thing_delete"}}, code: -32020, status: 400},
		{name: "tools/call without Mcp-Method", method: "tools/call", params: map[string]any{"name": "echo_call"}, meta: modernMeta(false), header: http.Header{"Mcp-Method": nil}, code: -32020, status: 400},
		{name: "tools/call without clientCapabilities", method: "tools/call", params: map[string]any{"name": "echo_call"}, meta: without(modernMeta(false), "io.modelcontextprotocol/clientCapabilities"), code: -32602, status: 400},
		{name: "tools/list without protocolVersion", method: "tools/list", meta: without(modernMeta(false), "io.modelcontextprotocol/protocolVersion"), code: -32602, status: 400},
		{name: "server/discover without _meta", method: "server/discover", code: -32602, status: 400},
		{name: "tools/list, _meta and header disagree", method: "tools/list", meta: modernMeta(false), header: http.Header{"Mcp-Protocol-Version": {"2025-11-25"}}, code: -32020, status: 400},
		{name: "tasks/get of an unknown task", method: "tasks/get", params: unknownTask, meta: modernMeta(true), code: -32602, status: 200},
		{name: "tasks/cancel of an unknown task", method: "tasks/cancel", params: unknownTask, meta: modernMeta(true), code: -32602, status: 200},
		{name: "tasks/update of an unknown task", method: "tasks/update", params: map[string]any{"taskId": "AAAAAAAAAAAAAAAAAAAAAA", "inputResponses": map[string]any{}}, meta: modernMeta(true), code: -32602, status: 200},
		{name: "tasks/get without taskId", method: "tasks/get", meta: modernMeta(true), header: http.Header{"Mcp-Name": {""}}, code: -32602, status: 200},
		{name: "tasks/get, undeclared", method: "tasks/get", params: unknownTask, meta: modernMeta(false), code: -32021, status: 400},
		{name: "tasks/get with a foreign Mcp-Name", method: "tasks/get", params: unknownTask, meta: modernMeta(true), header: http.Header{"Mcp-Name": {"another"}}, code: -32020, status: 400},
		{name: "tasks/result (not in Tasks v2)", method: "tasks/result", params: unknownTask, meta: modernMeta(true), code: -32601, status: 404},
		{name: "tasks/list (not in Tasks v2)", method: "tasks/list", meta: modernMeta(true), code: -32601, status: 404},
		{name: "subscriptions/listen", method: "subscriptions/listen", params: map[string]any{"notifications": map[string]any{}}, meta: modernMeta(false), code: -32601, status: 404},
		{name: "an unknown method", method: "no/such_method", meta: modernMeta(false), code: -32601, status: 404},
		{name: "an unsupported 2026-era version", method: "tools/list",
			meta: func() map[string]any {
				m := modernMeta(false)
				m["io.modelcontextprotocol/protocolVersion"] = "2099-01-01"
				return m
			}(),
			header: http.Header{"Mcp-Protocol-Version": {"2099-01-01"}}, code: -32022, status: 400},
		{name: "a successful tools/list", method: "tools/list", meta: modernMeta(false), code: 0, status: 200},
	}
	legacy := []statusCase{
		{name: "tools/call of an unknown tool", method: "tools/call", params: map[string]any{"name": "no_such_tool"}, code: -32602, status: 200},
		{name: "tools/call of an unknown tool, answered on SSE", method: "tools/call", params: map[string]any{"name": "no_such_tool"}, meta: map[string]any{"progressToken": "p1"}, code: -32602, status: 200},
		{name: "tools/call of a task-required tool", method: "tools/call", params: map[string]any{"name": requiredTool, "arguments": map[string]any{"entityId": "s"}}, code: -32021, status: 200},
		{name: "tasks/get, undeclared", method: "tasks/get", params: unknownTask, code: -32021, status: 200},
		{name: "tasks/get of an unknown task", method: "tasks/get", params: unknownTask,
			meta: map[string]any{"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{TasksExtension: map[string]any{}}}}, code: -32602, status: 200},
		{name: "tasks/get with a foreign Mcp-Name", method: "tasks/get", params: unknownTask, header: http.Header{"Mcp-Name": {"another"}}, code: -32020, status: 200},
		{name: "subscriptions/listen", method: "subscriptions/listen", code: -32601, status: 200},
		{name: "tasks/list", method: "tasks/list", code: -32601, status: 200},
		{name: "an unknown method", method: "no/such_method", code: -32601, status: 200},
		{name: "a successful tools/list", method: "tools/list", code: 0, status: 200},
	}
	id := 0
	for _, era := range []struct {
		version string
		cases   []statusCase
	}{{"2026-07-28", modern}, {"2025-11-25", legacy}} {
		for _, c := range era.cases {
			id++
			status, code, body := e.sendCase(t, era.version, id, c)
			if status != c.status || code != c.code {
				t.Errorf("%s %s: HTTP %d, code %d; want HTTP %d, code %d\n%s", era.version, c.name, status, code, c.status, c.code, body)
			}
		}
	}
}

// TestErrorStatusTable is the table itself, code by code and era by era,
// including the codes no request above reaches (-32603, -32600, -32700).
func TestErrorStatusTable(t *testing.T) {
	for _, tc := range []struct {
		rule errorStatus
		code int
		want int
	}{
		{errorStatus{modern: true}, -32020, 400},
		{errorStatus{modern: true}, -32021, 400},
		{errorStatus{modern: true}, -32022, 400},
		{errorStatus{modern: true}, -32601, 404},
		{errorStatus{modern: true}, -32602, 200},
		{errorStatus{modern: true, metaMissing: true}, -32602, 400},
		{errorStatus{modern: true}, -32603, 200},
		{errorStatus{modern: true}, -32600, 200},
		{errorStatus{modern: true}, -32700, 200},
		{errorStatus{modern: true}, -32000, 200},
		{errorStatus{modern: true}, 7, 200},
		{errorStatus{}, -32020, 200},
		{errorStatus{}, -32021, 200},
		{errorStatus{}, -32601, 200},
		{errorStatus{}, -32602, 200},
		{errorStatus{metaMissing: true}, -32602, 200},
		{errorStatus{}, -32603, 200},
	} {
		if got := tc.rule.of(tc.code); got != tc.want {
			t.Errorf("%+v.of(%d) = %d, want %d", tc.rule, tc.code, got, tc.want)
		}
	}
}
