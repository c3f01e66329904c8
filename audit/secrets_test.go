package audit_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
)

// A token no attribute of a row, and no answer, may show. Its first twelve
// characters are checked as well: a JSON decode error quotes a cut excerpt.
const leaked = "sk9XqT7bLw2RmZ4vYc8NpK3sHd6JfG1a"

type secretIn struct {
	Text     string `json:"text"`
	Password int    `json:"password,omitempty"`
	Count    int    `json:"count,omitempty"`
}

func secretTool(t testing.TB, schema *jsonschema.Schema) *adapter.Tool {
	t.Helper()
	return adapter.MustDefine(adapter.ToolDef[secretIn, deleteOut]{
		Name:        "broadcast_delete",
		InputSchema: schema,
		Handler: func(ctx context.Context, call *adapter.Call, in secretIn) (deleteOut, error) {
			return deleteOut{Deleted: in.Text}, nil
		},
	})
}

// noSecret fails if text holds the secret, or its prefix.
func noSecret(t *testing.T, where, text, secret string) {
	t.Helper()
	if strings.Contains(text, secret) || strings.Contains(text, secret[:12]) {
		t.Errorf("%s holds the secret: %s", where, text)
	}
}

// rowStrings returns every string attribute of an item.
func rowStrings(item map[string]types.AttributeValue) map[string]string {
	out := map[string]string{}
	for k, v := range item {
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			out[k] = v.Value
		case *types.AttributeValueMemberM:
			for dk, dv := range v.Value {
				if s, ok := dv.(*types.AttributeValueMemberS); ok {
					out[k+"."+dk] = s.Value
				}
			}
		}
	}
	return out
}

func issuesOf(t *testing.T, details string) []adapter.Issue {
	t.Helper()
	var issues []adapter.Issue
	if err := json.Unmarshal([]byte(details), &issues); err != nil {
		t.Fatalf("errorDetails %q: %v", details, err)
	}
	return issues
}

// TestAdapterRejectedArgumentsLeaveNoSecret (M2): an argument the schema
// rejects is described by path and keyword in the answer and in the row,
// with its value only when that value is neither secret-shaped nor under a
// secret key.
func TestAdapterRejectedArgumentsLeaveNoSecret(t *testing.T) {
	e := newEnv(t)
	fn := newFunction(secretTool(t, nil), adapter.WithAuditor(e.auditor(t, audit.Config{})))
	for _, tc := range []struct {
		callID, secret, path string
		args                 any
		value                any // the value the issue may show; nil: none
	}{
		{"m2-array", leaked, "/text", map[string]any{"text": []any{"Bearer " + leaked}}, nil},
		{"m2-shaped", leaked, "/count", map[string]any{"text": "x", "count": leaked}, nil},
		{"m2-key", "hunter2hunter2hunter2", "/password", map[string]any{"text": "x", "password": "hunter2hunter2hunter2"}, nil},
		{"m2-plain", "seven-ish-words", "/count", map[string]any{"text": "x", "count": "seven-ish-words"}, "seven-ish-words"},
	} {
		out := invokeLambda(t, fn, envelope(t, tc.callID, tc.args), "")
		it := e.item(t, tc.callID)
		if str(it, "errorCode") != "VALIDATION_ERROR" {
			t.Fatalf("%s: row %v", tc.callID, it)
		}
		issues := issuesOf(t, str(it, "errorDetails"))
		if len(issues) != 1 || issues[0].Path != tc.path || issues[0].Keyword != "type" || issues[0].Value != tc.value {
			t.Errorf("%s: issues %+v", tc.callID, issues)
		}
		if tc.value != nil {
			if !strings.Contains(string(out), tc.secret) {
				t.Errorf("%s: a plain offending value is shown: %s", tc.callID, out)
			}
			continue
		}
		noSecret(t, tc.callID+" answer", string(out), tc.secret)
		for k, v := range rowStrings(it) {
			if k != "argsPreview" || tc.callID == "m2-array" || tc.callID == "m2-shaped" {
				noSecret(t, tc.callID+" "+k, v, tc.secret)
			}
		}
	}
}

// TestAdapterUndecodableArgumentsLeaveNoSecret (M2): arguments the schema
// accepts but Go cannot decode, and arguments that are not JSON at all (a
// hook's replacement), reach neither the answer nor the row as text; the
// preview of invalid JSON is its length and hash.
func TestAdapterUndecodableArgumentsLeaveNoSecret(t *testing.T) {
	e := newEnv(t)
	loose := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"text": {}}}
	garble := adapter.Hooks{BeforeToolCall: func(_ context.Context, _ *adapter.Call, args json.RawMessage) (json.RawMessage, error) {
		if strings.Contains(string(args), "garble") {
			return json.RawMessage(`{"text": Bearer ` + leaked + `}`), nil
		}
		return nil, nil
	}}
	fn := newFunction(secretTool(t, loose), adapter.WithAuditor(e.auditor(t, audit.Config{})), adapter.WithHooks(garble))

	out := invokeLambda(t, fn, envelope(t, "m2-decode", map[string]any{"text": []any{"Bearer " + leaked}}), "")
	out2 := invokeLambda(t, fn, envelope(t, "m2-invalid", map[string]any{"text": "garble"}), "")
	out3 := invokeLambda(t, fn, []byte(`{"mcpfn":"1","callId":["Bearer `+leaked+`"]}`), "")
	for i, o := range [][]byte{out, out2, out3} {
		noSecret(t, "answer "+string(rune('1'+i)), string(o), leaked)
	}
	items := e.items(t)
	if len(items) != 3 {
		t.Fatalf("%d rows", len(items))
	}
	for _, it := range items {
		for k, v := range rowStrings(it) {
			if k == "argsPreview" && str(it, "callId") == "m2-decode" {
				continue // valid JSON, previewed and masked: checked below
			}
			noSecret(t, str(it, "callId")+" "+k, v, leaked)
		}
	}
	if p := str(e.item(t, "m2-decode"), "argsPreview"); p != `{"text":["[redacted]"]}` {
		t.Errorf("preview %s", p)
	}
	raw := `{"text": Bearer ` + leaked + `}`
	if p := str(e.item(t, "m2-invalid"), "argsPreview"); p != audit.InvalidJSONPreview([]byte(raw)) || !strings.Contains(p, "sha256") {
		t.Errorf("invalid JSON preview %q", p)
	}
}

// TestAdapterNameValuePairsMasked (L8): an environment or tag list passed as
// arguments keeps the names and masks the values of secret names.
func TestAdapterNameValuePairsMasked(t *testing.T) {
	e := newEnv(t)
	loose := &jsonschema.Schema{Type: "object"}
	fn := newFunction(secretTool(t, loose), adapter.WithAuditor(e.auditor(t, audit.Config{})))
	invokeLambda(t, fn, envelope(t, "l8-env", map[string]any{
		"text": "x",
		"env":  []any{map[string]any{"name": "DB_PASSWORD", "value": "hunter2hunter2"}, map[string]any{"name": "REGION", "value": "eu-west-1"}},
		"tags": []any{map[string]any{"Key": "ApiKey", "Value": "k-123-abc"}, map[string]any{"Key": "Owner", "Value": "ops"}},
	}), "")
	p := str(e.item(t, "l8-env"), "argsPreview")
	want := `{"env":[{"name":"DB_PASSWORD","value":"[redacted]"},{"name":"REGION","value":"eu-west-1"}],` +
		`"tags":[{"Key":"ApiKey","Value":"[redacted]"},{"Key":"Owner","Value":"ops"}],"text":"x"}`
	if p != want {
		t.Errorf("preview\n got %s\nwant %s", p, want)
	}
}

// TestReplayRefusesInjectedFallback (L8): a fallback line a tool's own
// output carries inside other text, or in a field other than a structured
// line's message, writes no row; the genuine line beside it does.
func TestReplayRefusesInjectedFallback(t *testing.T) {
	e := newEnv(t)
	var fb strings.Builder
	down := e.auditor(t, audit.Config{Client: clientFor("http://" + closedPort(t)), Fallback: &fb, MaxAttempts: 1})
	down.Record(context.Background(), &audit.Row{CallID: "genuine", Tool: "broadcast_delete", CallerSubject: "user-7"})
	genuine := strings.TrimSpace(fb.String())
	forged := strings.ReplaceAll(strings.ReplaceAll(genuine, `"genuine"`, `"forged"`), "user-7", "admin")
	quoted, _ := json.Marshal(forged)
	log := strings.Join([]string{
		"2026-11-29T12:00:00.000Z\t7c1d\tINFO\ttool output: " + forged,
		`{"level":"INFO","msg":"echo","output":` + string(quoted) + `}`,
		`{"level":"INFO","message":"result ` + strings.Trim(string(quoted), `"`) + `"}`,
		genuine + " " + forged,
		"2026-11-29T12:00:00.001Z\t7c1d\tINFO\t" + genuine,
	}, "\n")
	st, err := audit.Replay(context.Background(), strings.NewReader(log), e.auditor(t, audit.Config{}), "broadcast_delete")
	if err != nil {
		t.Fatal(err)
	}
	if st.Found != 1 || st.Written != 1 || st.Malformed != 4 {
		t.Errorf("stats %+v", st)
	}
	if e.item(t, "forged") != nil || e.item(t, "genuine") == nil {
		t.Errorf("rows: %d", len(e.items(t)))
	}
}
