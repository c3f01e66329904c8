package adapter_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/mcptool"
	"github.com/mcpfn/mcpfn/wire"
)

func agentCoreContext(toolName string) map[string]string {
	return map[string]string{
		"bedrockAgentCoreToolName":       toolName,
		"bedrockAgentCoreAwsRequestId":   "ac-req-1",
		"bedrockAgentCoreMcpMessageId":   "7",
		"bedrockAgentCoreGatewayId":      "gw-1",
		"bedrockAgentCoreTargetId":       "tgt-1",
		"bedrockAgentCoreMessageVersion": "1.0",
	}
}

func TestAgentCoreTarget(t *testing.T) {
	for _, name := range []string{"widgets-target___widget_update", "widget_update"} {
		t.Run(name, func(t *testing.T) {
			var seen *adapter.Call
			rec := newRecorder()
			fn := newFunction(widgetTool(t), adapter.WithHooks(rec.hooks(), adapter.Hooks{
				AfterToolCall: func(_ context.Context, c *adapter.Call, _ *adapter.Outcome) { seen = c },
			}))
			custom := agentCoreContext(name)
			custom["bedrockAgentCorePropagatedHeaders"] = `{"x-tenant-hint":"acme","x-n":3}`
			raw := invoke(t, fn, []byte(`{"entityId":"w-ac"}`), lambdaInvoke{Custom: custom})
			var res callResult
			if err := json.Unmarshal(raw, &res); err != nil || res.IsError {
				t.Fatalf("want a CallToolResult, got %s", raw)
			}
			if string(res.StructuredContent) != `{"entityId":"w-ac"}` {
				t.Fatalf("got %s", res.StructuredContent)
			}
			if seen.ID != "ac-req-1:7" || seen.Source != adapter.SourceAgentCore || seen.Tool != "widget_update" {
				t.Fatalf("call = %+v", seen)
			}
			if seen.AgentCore.PropagatedHeaders["x-tenant-hint"] != "acme" || seen.AgentCore.PropagatedHeaders["x-n"] != "3" {
				t.Fatalf("propagated headers = %v", seen.AgentCore.PropagatedHeaders)
			}
			if seen.AgentCore.GatewayID != "gw-1" || seen.AgentCore.TargetID != "tgt-1" {
				t.Fatalf("facts = %+v", seen.AgentCore)
			}
		})
	}
}

// TestAgentCorePayloadIsOnlyArguments: an AgentCore payload is the client's
// arguments, so an envelope-shaped one must not smuggle in an identity.
func TestAgentCorePayloadIsOnlyArguments(t *testing.T) {
	rec := newRecorder()
	fn := newFunction(widgetTool(t), adapter.WithHooks(rec.hooks()))
	forged := `{"mcpfn":"1","callId":"x","caller":{"subject":"root","authMethod":"jwt"},"params":{"name":"widget_update","arguments":{"entityId":"w"}}}`
	raw := invoke(t, fn, []byte(forged), lambdaInvoke{Custom: agentCoreContext("t___widget_update")})
	var res callResult
	_ = json.Unmarshal(raw, &res)
	if res.errorBody(t).Error != "VALIDATION_ERROR" {
		t.Fatalf("the forged envelope should be validated as arguments: %s", raw)
	}
	if got := rec.only(t); got.Caller != nil {
		t.Fatalf("identity smuggled through AgentCore arguments: %+v", got.Caller)
	}
}

func TestAgentCoreBadPropagatedHeaders(t *testing.T) {
	rec := newRecorder()
	fn := newFunction(widgetTool(t), adapter.WithHooks(rec.hooks()))
	custom := agentCoreContext("widget_update")
	custom["bedrockAgentCorePropagatedHeaders"] = `{not json`
	raw := invoke(t, fn, []byte(`{"entityId":"w"}`), lambdaInvoke{Custom: custom})
	var res callResult
	_ = json.Unmarshal(raw, &res)
	body := res.errorBody(t)
	if body.Error != "BAD_REQUEST" || !strings.Contains(body.Message, "bedrockAgentCorePropagatedHeaders") {
		t.Fatalf("got %+v", body)
	}
	rec.only(t)
}

func TestClientContextHeader(t *testing.T) {
	good := base64.StdEncoding.EncodeToString([]byte(`{"custom":{"bedrockAgentCoreToolName":"t___x","nested":{"a":1}}}`))
	cc, err := wire.DecodeClientContext(good)
	if err != nil || cc.Custom["bedrockAgentCoreToolName"] != "t___x" || cc.Custom["nested"] != `{"a":1}` {
		t.Fatalf("cc = %+v, err = %v", cc, err)
	}
	if _, err := wire.DecodeClientContext("%%%not base64"); err == nil || !strings.Contains(err.Error(), "base64") {
		t.Fatalf("want a base64 error, got %v", err)
	}
	bad := base64.StdEncoding.EncodeToString([]byte(`{"custom":`))
	if _, err := wire.DecodeClientContext(bad); err == nil || !strings.Contains(err.Error(), "JSON") {
		t.Fatalf("want a JSON error, got %v", err)
	}
}

// TestBadInput: every malformed invocation is a clear answer and exactly one
// AfterToolCall (so one audit row), never a panic, a hang or a Lambda error.
func TestBadInput(t *testing.T) {
	deep := strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000)
	huge := `{"entityId":"` + strings.Repeat("x", 5<<20) + `"}`
	cases := []struct {
		name    string
		payload []byte
		want    string // substring of the error (code or message)
		rpc     bool   // answered as a JSON-RPC error
	}{
		{"malformed JSON", []byte(`{"mcpfn":"1",`), "not valid JSON", true},
		{"JSON that is not an object", []byte(`42`), "not an object", true},
		{"a bare string", []byte(`"tools/call"`), "not an object", true},
		{"unknown format", []byte(`{"name":"widget_update"}`), "AgentCore Gateway", true},
		{"unknown envelope version", []byte(`{"mcpfn":"2","callId":"c","params":{"name":"widget_update"}}`), `version "2"; this function accepts version "1"`, true},
		{"unknown tool", envelopeOf(t, "c", "widget_delete", map[string]any{"entityId": "w"}, nil), `unknown tool "widget_delete"`, true},
		{"wrong argument type", envelopeOf(t, "c", "widget_update", map[string]any{"entityId": 5}, nil), "VALIDATION_ERROR", false},
		{"missing required argument", envelopeOf(t, "c", "widget_update", map[string]any{"note": "n"}, nil), "VALIDATION_ERROR", false},
		{"extra argument", envelopeOf(t, "c", "widget_update", map[string]any{"entityId": "w", "admin": true}, nil), "VALIDATION_ERROR", false},
		{"arguments not an object", signedRaw(t, "c", "widget_update", `[1]`), "must be a JSON object", false},
		{"5 MB argument", signedRaw(t, "c", "widget_update", huge), "PAYLOAD_TOO_LARGE", false},
		{"envelope without a call token", []byte(`{"mcpfn":"1","callId":"c","params":{"name":"widget_update","arguments":{"entityId":"w"}}}`), "token_missing", false},
		{"10,000 levels deep", []byte(`{"mcpfn":"1","callId":"c","params":{"name":"widget_update","arguments":` + deep + `}}`), "nests deeper than", true},
		{"invalid UTF-8", append([]byte(`{"mcpfn":"1","callId":"c","params":{"name":"widget_update","arguments":{"entityId":"`), 0xff, 0xfe, '"', '}', '}', '}'), "not valid UTF-8", true},
		{"envelope without callId", []byte(`{"mcpfn":"1","params":{"name":"widget_update","arguments":{"entityId":"w"}}}`), "no callId", true},
		{"JSON-RPC without method", []byte(`{"jsonrpc":"2.0","id":1}`), "method", true},
		{"JSON-RPC unknown tool", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nope"}}`), "unknown tool", true},
		{"empty payload", []byte(``), "not valid JSON", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder()
			fn := newFunction(widgetTool(t), adapter.WithHooks(rec.hooks()))
			raw := invoke(t, fn, tc.payload, lambdaInvoke{})
			if !json.Valid(raw) {
				t.Fatalf("answer is not JSON: %q", raw)
			}
			var generic struct {
				Error  *wire.RPCError `json:"error"`
				Result *callResult    `json:"result"`
			}
			if err := json.Unmarshal(raw, &generic); err != nil {
				t.Fatalf("answer %s: %v", raw, err)
			}
			if tc.rpc {
				if generic.Error == nil || !strings.Contains(generic.Error.Message, tc.want) {
					t.Fatalf("want a protocol error containing %q, got %s", tc.want, raw)
				}
			} else {
				if generic.Result == nil || !generic.Result.IsError {
					t.Fatalf("want an error result, got %s", raw)
				}
				if !strings.Contains(generic.Result.Content[0].Text, tc.want) {
					t.Fatalf("want %q in %s", tc.want, generic.Result.Content[0].Text)
				}
			}
			got := rec.only(t)
			if got.Err == nil {
				t.Fatal("AfterToolCall saw no error")
			}
			if len(raw) > 64<<10 {
				t.Fatalf("the answer echoes the input (%d bytes)", len(raw))
			}
		})
	}
}

func TestValidationIssuesAreReturned(t *testing.T) {
	fn := newFunction(widgetTool(t))
	res, _ := runOne(t, fn, map[string]any{"entityId": 5, "sleepMs": "x"}, nil)
	body := res.errorBody(t)
	var issues []adapter.Issue
	if err := json.Unmarshal(body.Details, &issues); err != nil || len(issues) == 0 {
		t.Fatalf("details = %s", body.Details)
	}
	if body.Retryable {
		t.Fatal("validation errors are not retryable")
	}
}

func TestJSONRPCProtocolMethods(t *testing.T) {
	tool := widgetTool(t)
	rec := newRecorder()
	fn := newFunction(tool, adapter.WithHooks(rec.hooks()))

	raw := invoke(t, fn, []byte(`{"jsonrpc":"2.0","id":"l","method":"tools/list"}`), lambdaInvoke{})
	var list struct {
		ID     string `json:"id"`
		Result struct {
			Tools []json.RawMessage `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(raw, &list); err != nil || len(list.Result.Tools) != 1 || list.ID != "l" {
		t.Fatalf("tools/list = %s", raw)
	}
	// As the go-sdk's type writes it: the gateway lists it so.
	mt, err := mcptool.Of(tool)
	if err != nil {
		t.Fatal(err)
	}
	want := mustJSON(t, mt)
	if !bytes.Equal(list.Result.Tools[0], want) {
		t.Fatalf("tools/list differs from the definition:\n%s\n%s", list.Result.Tools[0], want)
	}

	raw = invoke(t, fn, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), lambdaInvoke{})
	if string(raw) != "null" {
		t.Fatalf("a notification has no response, got %s", raw)
	}
	raw = invoke(t, fn, []byte(`{"jsonrpc":"2.0","id":2,"method":"resources/list"}`), lambdaInvoke{})
	if !strings.Contains(string(raw), `"code":-32601`) {
		t.Fatalf("unknown method: %s", raw)
	}
	if len(rec.done) != 0 {
		t.Fatalf("protocol methods are not tool calls: %d AfterToolCall", len(rec.done))
	}

	// A modern JSON-RPC tools/call carries its protocol facts in _meta.
	raw = invoke(t, fn, []byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"widget_update","arguments":{"entityId":"w"},
		"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"inspector","version":"0.9"},"progressToken":"p1"}}}`), lambdaInvoke{RequestID: "rq"})
	if !strings.Contains(string(raw), `"id":3`) || strings.Contains(string(raw), "isError") {
		t.Fatalf("tools/call: %s", raw)
	}
	got := rec.only(t)
	if got.CallID != "rq#0" {
		t.Fatalf("call id %q", got.CallID)
	}
}

func TestBatchOfGarbageAnswersEachEntry(t *testing.T) {
	rec := newRecorder()
	fn := newFunction(widgetTool(t), adapter.WithHooks(rec.hooks()))
	raw := invoke(t, fn, []byte(`[1,{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"widget_update","arguments":{"entityId":"w"}}}]`), lambdaInvoke{})
	var resps []struct {
		ID     json.RawMessage `json:"id"`
		Error  *wire.RPCError  `json:"error"`
		Result *callResult     `json:"result"`
	}
	if err := json.Unmarshal(raw, &resps); err != nil || len(resps) != 2 {
		t.Fatalf("want two answers: %s", raw)
	}
	if resps[0].Error == nil || resps[0].Error.Code != wire.RPCInvalidRequest || string(resps[0].ID) != "null" {
		t.Fatalf("entry 0: %s", raw)
	}
	if resps[1].Result == nil || resps[1].Result.IsError || string(resps[1].ID) != `"a"` {
		t.Fatalf("entry 1: %s", raw)
	}
	if len(rec.done) != 2 {
		t.Fatalf("every entry is a call attempt with its own AfterToolCall: %d", len(rec.done))
	}
}

func TestTenantAndSessionKey(t *testing.T) {
	var seen []*adapter.Call
	fn := newFunction(widgetTool(t), adapter.WithHooks(adapter.Hooks{
		AfterToolCall: func(_ context.Context, c *adapter.Call, _ *adapter.Outcome) { seen = append(seen, c) },
	}))
	// Lambda tenant isolation gives the tenant when no verified identity does.
	invoke(t, fn, envelopeOf(t, "c1", "widget_update", map[string]any{"entityId": "w"}, nil), lambdaInvoke{Tenant: "tenant-from-lambda"})
	// A verified identity's tenant wins.
	invoke(t, fn, envelopeOf(t, "c2", "widget_update", map[string]any{"entityId": "w"}, alice), lambdaInvoke{Tenant: "tenant-from-lambda"})
	if seen[0].Tenant() != "tenant-from-lambda" || seen[1].Tenant() != "acme" {
		t.Fatalf("tenants = %q, %q", seen[0].Tenant(), seen[1].Tenant())
	}
	// The same session id under two principals never shares a key.
	mallory := &adapter.Identity{Subject: "mallory", AuthMethod: "jwt", Tenant: "acme"}
	for i, caller := range []*adapter.Identity{alice, mallory} {
		var env map[string]any
		_ = json.Unmarshal(envelopeOf(t, fmt.Sprintf("s%d", i), "widget_update", map[string]any{"entityId": "w"}, caller), &env)
		env["sessionId"] = "s-1"
		invoke(t, fn, mustJSON(t, env), lambdaInvoke{})
	}
	if a, b := seen[2], seen[3]; a.SessionID != "s-1" || a.SessionKey() == b.SessionKey() {
		t.Fatalf("session keys must compose tenant and principal: %q, %q", a.SessionKey(), b.SessionKey())
	}
	if !seen[0].Lambda.Deadline.After(time.Now().Add(-time.Minute)) || seen[0].Lambda.RequestID == "" {
		t.Fatalf("lambda facts = %+v", seen[0].Lambda)
	}
}

// TestEnvelopeVersionIsTheString1: the envelope version is the JSON string
// "1" and nothing that reads like it. A number, a longer version, null or an
// empty string is a bad request (-32600) with one AfterToolCall (the audit
// row), and the handler never runs.
func TestEnvelopeVersionIsTheString1(t *testing.T) {
	for name, version := range map[string]string{
		"number 1": `1`, "number 1.0": `1.0`, `"1.0"`: `"1.0"`, "null": `null`, "empty": `""`,
		`" 1"`: `" 1"`, "object": `{"v":"1"}`, "array": `["1"]`, "true": `true`,
	} {
		t.Run(name, func(t *testing.T) {
			rec := newRecorder()
			ran := false
			tool := widgetTool(t, func(d *adapter.ToolDef[widgetIn, widgetOut]) {
				d.Handler = func(context.Context, *adapter.Call, widgetIn) (widgetOut, error) {
					ran = true
					return widgetOut{}, nil
				}
			})
			fn := adapter.New(tool, adapter.WithHooks(rec.hooks()))
			payload := []byte(`{"mcpfn":` + version + `,"callId":"c-v","params":{"name":"widget_update","arguments":{"entityId":"w"}}}`)
			raw := invoke(t, fn, payload, lambdaInvoke{})
			var resp struct {
				Error  *wire.RPCError  `json:"error"`
				Result json.RawMessage `json:"result"`
			}
			if err := json.Unmarshal(raw, &resp); err != nil {
				t.Fatalf("answer %s: %v", raw, err)
			}
			if resp.Error == nil || resp.Error.Code != wire.RPCInvalidRequest || resp.Result != nil {
				t.Fatalf("want a -32600 error, got %s", raw)
			}
			if ran {
				t.Fatal("the handler ran for an envelope of the wrong version")
			}
			got := rec.only(t)
			if got.Stage != adapter.StageDecode || adapter.CodeOf(got.Err) != adapter.CodeBadRequest {
				t.Fatalf("AfterToolCall saw stage %s, error %v", got.Stage, got.Err)
			}
		})
	}
}

// A call id keys the audit row, so one the payload supplies must be an id:
// free text or a credential there is refused (envelope) or ignored
// (AgentCore), and the Lambda request id names the call instead. The
// adversarial suite found a bearer token stored as a row's key.
func TestCallIDsThatAreNotIDs(t *testing.T) {
	for _, id := range []string{"Bearer sk-live-0123456789abcdefghij", "sk-live-0123456789abcdefghij", "a b", strings.Repeat("c", 129), "c\u00e9"} {
		rec := newRecorder()
		fn := newFunction(widgetTool(t), adapter.WithHooks(rec.hooks()))
		payload := mustJSON(t, map[string]any{"mcpfn": "1", "callId": id, "params": map[string]any{"name": "widget_update", "arguments": map[string]any{"entityId": "w"}}})
		raw := invoke(t, fn, payload, lambdaInvoke{RequestID: "req-42"})
		if !strings.Contains(string(raw), "callId is not an id") {
			t.Errorf("callId %q answered %s", id, raw)
		}
		if got := rec.only(t); got.CallID != "req-42#0" {
			t.Errorf("callId %q: the call is named %q, want the Lambda request id", id, got.CallID)
		}
	}
	for _, good := range []string{"5f0c1e7a9b2d4c3e8f7a6b5c4d3e2f10", "local-delete-0001", "0b3f1c9e-2a4d-4e8f-9c1b-7d6e5f4a3b2c:17"} {
		rec := newRecorder()
		fn := newFunction(widgetTool(t), adapter.WithHooks(rec.hooks()))
		invoke(t, fn, signedRaw(t, good, "widget_update", `{"entityId":"w"}`), lambdaInvoke{RequestID: "req-43"})
		if got := rec.only(t); got.CallID != good {
			t.Errorf("call id %q became %q", good, got.CallID)
		}
	}
	// AgentCore: the client context's request and message ids name the
	// call only when they make an id.
	rec := newRecorder()
	fn := newFunction(widgetTool(t), adapter.WithHooks(rec.hooks()))
	custom := agentCoreContext("widgets___widget_update")
	custom["bedrockAgentCoreAwsRequestId"] = "Bearer sk-live-0123456789abcdefghij"
	invoke(t, fn, []byte(`{"entityId":"w"}`), lambdaInvoke{RequestID: "req-44", Custom: custom})
	if got := rec.only(t); got.CallID != "req-44#0" {
		t.Errorf("AgentCore call named %q, want the Lambda request id", got.CallID)
	}
}

// TestCallOutlivesPayloadBuffer: aws-lambda-go reads every invocation into
// one reused buffer, and a call's values may outlive its invocation (a late
// handler, the audit row). Overwriting the payload after Invoke must not
// change what the call saw.
func TestCallOutlivesPayloadBuffer(t *testing.T) {
	var seen *adapter.Call
	fn := newFunction(widgetTool(t), adapter.WithHooks(adapter.Hooks{
		AfterToolCall: func(_ context.Context, c *adapter.Call, _ *adapter.Outcome) { seen = c },
	}))
	payload := envelopeOf(t, "call-outlives", "widget_update", map[string]any{"entityId": "w-1", "note": "hello"},
		&adapter.Identity{Subject: "alice", AuthMethod: "jwt"})
	invoke(t, fn, payload, lambdaInvoke{})
	if seen == nil {
		t.Fatal("AfterToolCall did not run")
	}
	id, tool, args := seen.ID, seen.Tool, string(seen.Arguments)
	for i := range payload {
		payload[i] = 'x'
	}
	if seen.ID != id || seen.Tool != tool || string(seen.Arguments) != args ||
		id != "call-outlives" || tool != "widget_update" || !strings.Contains(args, `"entityId":"w-1"`) {
		t.Fatalf("the call changed with the payload buffer: id %q tool %q args %s", seen.ID, seen.Tool, seen.Arguments)
	}
}
