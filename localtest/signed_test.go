package localtest_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/calltoken"
	"github.com/mcpfn/mcpfn/localtest"
)

// rowOf reads the audit row of a call id.
func rowOf(t *testing.T, callID string) (audit.Row, bool) {
	t.Helper()
	out, err := stack.DynamoDB().GetItem(t.Context(), &dynamodb.GetItemInput{
		TableName: aws.String(stack.AuditTable()), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{audit.KeyAttribute: &types.AttributeValueMemberS{Value: audit.RowKey("broadcast_delete", callID)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.Item == nil {
		return audit.Row{}, false
	}
	var r audit.Row
	if err := attributevalue.UnmarshalMap(out.Item, &r); err != nil {
		t.Fatal(err)
	}
	return r, true
}

func invokeRaw(t *testing.T, function string, payload []byte) []byte {
	t.Helper()
	out, err := lambdaClient().Invoke(t.Context(), &lambda.InvokeInput{FunctionName: aws.String(function), Payload: payload})
	if err != nil {
		t.Fatal(err)
	}
	if out.FunctionError != nil {
		t.Fatalf("function error %s: %s", *out.FunctionError, out.Payload)
	}
	return out.Payload
}

// errorOf returns the error code and details of an envelope answer's tool
// error ("" when it succeeded).
func errorOf(t *testing.T, answer []byte) (string, string) {
	t.Helper()
	var resp struct {
		Result struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal(answer, &resp); err != nil {
		t.Fatalf("answer %s: %v", answer, err)
	}
	if !resp.Result.IsError {
		return "", ""
	}
	var body struct {
		Error   string          `json:"error"`
		Details json.RawMessage `json:"details"`
	}
	_ = json.Unmarshal([]byte(resp.Result.Content[0].Text), &body)
	return body.Error, string(body.Details)
}

// The attack, through the Invoke API and the emulator: an insider
// invokes the delete function with an envelope naming mallory. It is
// refused, the broadcast is still there, and the row names no caller (the
// claim is kept as unverified).
func TestForgedEnvelopeThroughTheInvokeAPI(t *testing.T) {
	cs := connect(t, unique("owner"))
	id := call(t, cs, "broadcast_create", map[string]any{"channel": unique("ch"), "text": "keep me"})["id"].(string)

	callID := unique("forged")
	forged, _ := json.Marshal(map[string]any{
		"mcpfn": "1", "callId": callID,
		"params": map[string]any{"name": "broadcast_delete", "arguments": map[string]any{"id": id}},
		"caller": map[string]any{"subject": "mallory", "authMethod": "jwt", "scopes": []string{"broadcasts:write"}},
	})
	code, details := errorOf(t, invokeRaw(t, "BroadcastDeleteFunction", forged))
	if code != "UNAUTHORIZED" || !strings.Contains(details, string(calltoken.ReasonMissing)) {
		t.Fatalf("forged delete answered %s %s", code, details)
	}
	if got := call(t, cs, "broadcast_get", map[string]any{"id": id}); got["id"] != id {
		t.Fatalf("the broadcast is gone: %v", got)
	}
	row, ok := rowOf(t, callID)
	if !ok {
		t.Fatal("no audit row for the refused call")
	}
	if row.CallerSubject != "" || row.UnverifiedCaller != "mallory" || row.ErrorCode != "UNAUTHORIZED" || row.Stage != "authenticate" {
		t.Fatalf("row: caller %q unverified %q code %s stage %s", row.CallerSubject, row.UnverifiedCaller, row.ErrorCode, row.Stage)
	}

	// A token the delete function's own key signed for another function
	// (what a compromised broadcast_get could mint with its key) is refused
	// by the delete function too.
	keys, err := localtest.LoadKeys(stackDir(t))
	if err != nil {
		t.Fatal(err)
	}
	getSigned, err := keys.SignEnvelope([]byte(`{"mcpfn":"1","callId":"`+unique("x")+`","params":{"name":"broadcast_get","arguments":{"id":"`+id+`"}}}`),
		&calltoken.Identity{Subject: "mallory", AuthMethod: "jwt", Scopes: []string{"broadcasts:write"}}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var env map[string]any
	_ = json.Unmarshal(getSigned, &env)
	env["params"] = map[string]any{"name": "broadcast_delete", "arguments": map[string]any{"id": id}}
	retargeted, _ := json.Marshal(env)
	if code, details := errorOf(t, invokeRaw(t, "BroadcastDeleteFunction", retargeted)); code != "UNAUTHORIZED" {
		t.Fatalf("a token for broadcast_get opened broadcast_delete: %s %s", code, details)
	}
}

// stackDir is the running stack's directory (MCPFN_LOCAL_DIR).
func stackDir(t *testing.T) string {
	t.Helper()
	return filepath.Dir(stack.XRayPath())
}

// Two callers, one stack: a token minted like `mcpfn-local token -sub bob`
// (no scopes) lists the demo user's tools but those that need
// broadcasts:write, and its delete is refused at the gateway.
func TestTwoCallersSeeDifferentTools(t *testing.T) {
	keys, err := localtest.LoadKeys(stackDir(t))
	if err != nil {
		t.Fatal(err)
	}
	names := func(token string) []string {
		client := mcp.NewClient(&mcp.Implementation{Name: "mcpfn-e2e", Version: "1.0.0"}, nil)
		cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: stack.MCPURL(), HTTPClient: httpClient(token)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		res, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tl := range res.Tools {
			out = append(out, tl.Name)
		}
		return out
	}
	bob, err := keys.MintToken("bob", nil)
	if err != nil {
		t.Fatal(err)
	}
	demo, err := keys.MintToken(localtest.DemoSubject, []string{demoScope})
	if err != nil {
		t.Fatal(err)
	}
	b, d := names(bob), names(demo)
	onlyDemo := slices.DeleteFunc(slices.Clone(d), func(n string) bool { return slices.Contains(b, n) })
	slices.Sort(onlyDemo)
	if !slices.Equal(onlyDemo, []string{"broadcast_attach", "broadcast_delete"}) || len(d) != len(b)+2 {
		t.Fatalf("bob sees %v, the demo user %v", b, d)
	}
}

// `mcpfn-local sign-events` output runs: every signed event gets past the
// token check in its function (the committed, unsigned ones do not).
func TestSignedEventsPassVerification(t *testing.T) {
	keys, err := localtest.LoadKeys(stackDir(t))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	written, err := keys.SignEvents("events", out, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	functions := map[string]string{}
	for tool, lt := range keys.Tools {
		functions[tool] = lt.Function
	}
	for _, p := range written {
		tool := strings.TrimSuffix(filepath.Base(p), ".json")
		signed, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if code, details := errorOf(t, invokeRaw(t, functions[tool], signed)); code == "UNAUTHORIZED" {
			t.Errorf("%s: the signed event was refused: %s", tool, details)
		}
		unsigned, err := os.ReadFile(filepath.Join("events", tool+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if code, _ := errorOf(t, invokeRaw(t, functions[tool], unsigned)); code != "UNAUTHORIZED" {
			t.Errorf("%s: the unsigned event was answered with %q", tool, code)
		}
	}
}

func httpClient(token string) *http.Client {
	return &http.Client{Transport: bearer{token}, Timeout: time.Minute}
}

// A captured envelope replayed within its token's lifetime does not run a
// destructive tool twice: the call id's row is there, and the second
// attempt is refused with what the first one's row says.
func TestReplayedEnvelopeDoesNotDeleteTwice(t *testing.T) {
	cs := connect(t, unique("owner"))
	id := call(t, cs, "broadcast_create", map[string]any{"channel": unique("ch"), "text": "delete me once"})["id"].(string)
	keys, err := localtest.LoadKeys(stackDir(t))
	if err != nil {
		t.Fatal(err)
	}
	callID := unique("replayed")
	captured, err := keys.SignEnvelope([]byte(`{"mcpfn":"1","callId":"`+callID+`","params":{"name":"broadcast_delete","arguments":{"id":"`+id+`"}}}`),
		&calltoken.Identity{Subject: "alice", AuthMethod: "jwt", Scopes: []string{demoScope}}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if code, details := errorOf(t, invokeRaw(t, "BroadcastDeleteFunction", captured)); code != "" {
		t.Fatalf("first delete: %s %s", code, details)
	}
	// The first attempt's final row is written after its answer, before its
	// environment takes the next invoke; a replay sent at once can reach
	// another environment while that row still says pending, and is
	// refused naming the pending attempt (right, but not this test's
	// point; it failed so once under load). Settled, the row is done.
	if err := stack.Settle(t.Context()); err != nil {
		t.Fatal(err)
	}
	code, details := errorOf(t, invokeRaw(t, "BroadcastDeleteFunction", captured))
	if code != "CONFLICT" || !strings.Contains(details, `"status":"done"`) {
		t.Fatalf("replay answered %s %s; want CONFLICT naming the earlier attempt", code, details)
	}
	row, ok := rowOf(t, callID)
	if !ok || !row.OK || row.CallerSubject != "alice" {
		t.Fatalf("the first attempt's row was not kept: %+v", row)
	}
}
