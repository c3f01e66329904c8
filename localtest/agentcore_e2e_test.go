package localtest_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/calltoken"
)

// connectAgentCore opens an MCP session to the stack's AgentCore Gateway
// stand-in as subject holding scope ("" for none).
func connectAgentCore(t *testing.T, subject, scope string) *mcp.ClientSession {
	t.Helper()
	if stack.AgentCoreURL() == "" {
		t.Fatal("the stack runs no AgentCore front: template.yaml declares no AWS::BedrockAgentCore::Gateway")
	}
	claims := map[string]any{"sub": subject, "client_id": "agentcore-e2e"}
	if scope != "" {
		claims["scope"] = scope
	}
	token, err := stack.MintToken(claims)
	if err != nil {
		t.Fatal(err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpfn-e2e-agentcore", Version: "1.0.0"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{
		Endpoint:   stack.AgentCoreURL(),
		HTTPClient: &http.Client{Transport: bearer{token}, Timeout: time.Minute},
	}, nil)
	if err != nil {
		t.Fatalf("connecting to %s: %v", stack.AgentCoreURL(), err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// acErrorBody is the adapter's error body of an isError result.
type acErrorBody struct {
	Error   string          `json:"error"`
	Details json.RawMessage `json:"details"`
}

func errorBody(t *testing.T, res *mcp.CallToolResult) acErrorBody {
	t.Helper()
	var b acErrorBody
	if !res.IsError || json.Unmarshal([]byte(text(res)), &b) != nil {
		t.Fatalf("want an error result with the adapter's body, got %+v (%s)", res, text(res))
	}
	return b
}

// Through the AgentCore front — CUSTOM_JWT, the interceptor under the
// emulator, Lambda targets with AgentCore's client context — a caller
// holding broadcasts:write deletes, and the function's audit row names the
// verified caller; a caller without the scope is refused by the interceptor
// and the delete function is never invoked.
func TestAgentCoreFrontCallsCarryTheVerifiedCaller(t *testing.T) {
	writer := unique("ac-writer")
	ac := connectAgentCore(t, writer, demoScope)
	list, err := ac.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	if !slices.Contains(names, "broadcast-delete___broadcast_delete") {
		t.Fatalf("tools/list: %v", names)
	}
	id := call(t, ac, "broadcast-create___broadcast_create", map[string]any{"channel": unique("ac"), "text": "via agentcore"})["id"].(string)
	deleted := call(t, ac, "broadcast-delete___broadcast_delete", map[string]any{"id": id})
	if d, _ := deleted["deleted"].(map[string]any); d["id"] != id {
		t.Fatalf("delete answered %v", deleted)
	}
	rows, err := auditor().CallerRows(t.Context(), localCaller(writer), audit.QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var done []string
	for _, r := range rows {
		if r.Status != audit.StatusDone {
			continue
		}
		done = append(done, r.Tool)
		if !r.OK || r.Source != "agentcore" || r.CallerAuthMethod != "jwt" || r.CallerClientID != "agentcore-e2e" {
			t.Errorf("row %s: ok %v source %s caller %s/%s/%s", r.Tool, r.OK, r.Source, r.CallerSubject, r.CallerAuthMethod, r.CallerClientID)
		}
	}
	if strings.Join(done, " ") != "broadcast_create broadcast_delete" {
		t.Fatalf("rows naming %s: %v", writer, done)
	}

	reader := unique("ac-reader")
	ro := connectAgentCore(t, reader, "broadcasts:read")
	kept := call(t, ro, "broadcast-create___broadcast_create", map[string]any{"channel": unique("ac"), "text": "keep me"})["id"].(string)
	before := stack.Invocations("BroadcastDeleteFunction")
	res, err := ro.CallTool(t.Context(), &mcp.CallToolParams{Name: "broadcast-delete___broadcast_delete", Arguments: map[string]any{"id": kept}})
	if err != nil {
		t.Fatal(err)
	}
	if b := errorBody(t, res); b.Error != "FORBIDDEN" || !strings.Contains(string(b.Details), demoScope) {
		t.Fatalf("delete without the scope answered %+v", b)
	}
	if n := stack.Invocations("BroadcastDeleteFunction") - before; n != 0 {
		t.Fatalf("the delete function was invoked %d times for a refused call", n)
	}
	if got := call(t, ro, "broadcast-get___broadcast_get", map[string]any{"id": kept}); got["id"] != kept {
		t.Fatalf("the broadcast is gone: %v", got)
	}
	rows, err = auditor().CallerRows(t.Context(), localCaller(reader), audit.QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Tool == "broadcast_delete" {
			t.Fatalf("a delete row for the refused caller: %+v", r)
		}
	}
}

// An insider invokes the delete target directly with AgentCore's client
// context and a forged _mcpfn token: UNAUTHORIZED with the reason, the
// broadcast stays, and the row names no caller.
func TestAgentCoreForgedTokenThroughTheInvokeAPI(t *testing.T) {
	cs := connect(t, unique("owner"))
	id := call(t, cs, "broadcast_create", map[string]any{"channel": unique("ch"), "text": "keep me too"})["id"].(string)

	forger := calltoken.NewSigner(calltoken.SignerInterceptor)
	ring, err := calltoken.KeyringFromSecrets([]byte(strings.Repeat("not the function's key ", 3)))
	if err != nil {
		t.Fatal(err)
	}
	forger.Add("broadcast_delete", "BroadcastDeleteFunction", ring, nil)
	args := []byte(`{"id":"` + id + `"}`)
	forged, err := forger.Sign(calltoken.Call{Tool: "broadcast_delete", CallID: unique("forged"), Args: args, Expires: time.Now().Add(time.Minute),
		Caller: &calltoken.Identity{Subject: "mallory", AuthMethod: "jwt", Scopes: []string{demoScope}}})
	if err != nil {
		t.Fatal(err)
	}
	requestID := unique("ac-req")
	cc, _ := json.Marshal(map[string]any{"custom": map[string]string{
		"bedrockAgentCoreToolName":       "broadcast-delete___broadcast_delete",
		"bedrockAgentCoreAwsRequestId":   requestID,
		"bedrockAgentCoreMcpMessageId":   "1",
		"bedrockAgentCoreGatewayId":      "gw-forged",
		"bedrockAgentCoreTargetId":       "tgt-forged",
		"bedrockAgentCoreMessageVersion": "1.0",
	}})
	out, err := lambdaClient().Invoke(t.Context(), &lambda.InvokeInput{
		FunctionName:  aws.String("BroadcastDeleteFunction"),
		Payload:       []byte(`{"id":"` + id + `","_mcpfn":{"callToken":"` + forged + `"}}`),
		ClientContext: aws.String(base64.StdEncoding.EncodeToString(cc)),
	})
	if err != nil || out.FunctionError != nil {
		t.Fatalf("invoke: %v %v", err, out)
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(out.Payload, &res); err != nil {
		t.Fatalf("answer %s: %v", out.Payload, err)
	}
	if b := errorBody(t, &res); b.Error != "UNAUTHORIZED" || !strings.Contains(string(b.Details), string(calltoken.ReasonUnknownKey)) {
		t.Fatalf("forged AgentCore delete answered %+v", b)
	}
	if got := call(t, cs, "broadcast_get", map[string]any{"id": id}); got["id"] != id {
		t.Fatalf("the broadcast is gone: %v", got)
	}
	row, ok := rowOf(t, requestID+":1")
	if !ok {
		t.Fatal("no audit row for the refused call")
	}
	if row.CallerSubject != "" || row.Source != "agentcore" || row.ErrorCode != "UNAUTHORIZED" || row.Stage != "authenticate" {
		t.Fatalf("row: caller %q source %s code %s stage %s", row.CallerSubject, row.Source, row.ErrorCode, row.Stage)
	}
}
