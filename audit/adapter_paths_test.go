package audit_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/internal/lambdatest"
)

// pathIn selects, per call, the path through the hook chain.
type pathIn struct {
	ID   string `json:"id"`
	Mode string `json:"mode,omitempty"`
}

func pathTool(t testing.TB) *adapter.Tool {
	t.Helper()
	return adapter.MustDefine(adapter.ToolDef[pathIn, deleteOut]{
		Name:        "broadcast_delete",
		Destructive: true,
		Scopes:      []string{"broadcasts:write"},
		Handler: func(ctx context.Context, call *adapter.Call, in pathIn) (deleteOut, error) {
			call.SetDimension("entityId", in.ID)
			switch in.Mode {
			case "panic":
				panic("handler exploded on " + in.ID)
			case "slow":
				<-ctx.Done()
				return deleteOut{}, ctx.Err()
			case "raw":
				return deleteOut{}, errors.New("dial tcp 10.0.0.7:5432: connection refused")
			case "app":
				return deleteOut{}, adapter.NewError(adapter.CodeNotFound, "no broadcast "+in.ID)
			case "exit":
				// The process dies mid-handler, as an out-of-memory kill
				// or a runtime crash would.
				os.Exit(3)
			}
			return deleteOut{Deleted: in.ID}, nil
		},
	})
}

func pathEnvelope(t testing.TB, callID string, args any, scopes ...string) []byte {
	t.Helper()
	argsJSON, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(map[string]any{
		"mcpfn": "1", "callId": callID,
		"params":    map[string]any{"name": "broadcast_delete", "arguments": json.RawMessage(argsJSON)},
		"callToken": lambdatest.Token(testFunction, "broadcast_delete", callID, &adapter.Identity{Subject: "user-7", AuthMethod: "jwt", Scopes: scopes}, argsJSON),
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAdapterEveryPathLeavesOneFinalRow drives every path of the hook chain
// through the Lambda entry point of one destructive tool and checks the row
// each left: exactly one, final, with the stage and code of its failure and
// the raw error only where the caller's copy was scrubbed.
func TestAdapterEveryPathLeavesOneFinalRow(t *testing.T) {
	e := newEnv(t)
	reject := adapter.Hooks{BeforeToolCall: func(_ context.Context, _ *adapter.Call, args json.RawMessage) (json.RawMessage, error) {
		if strings.Contains(string(args), "reject-me") {
			return nil, adapter.NewError(adapter.CodeForbidden, "policy says no")
		}
		return nil, nil
	}}
	fn := newFunction(pathTool(t), adapter.WithAuditor(e.auditor(t, audit.Config{})), adapter.WithHooks(reject),
		adapter.WithReserve(700*time.Millisecond))
	cases := []struct {
		callID, stage, code string
		payload             []byte
		raw                 bool
	}{
		{"p-ok", "done", "", pathEnvelope(t, "p-ok", pathIn{ID: "b1"}, "broadcasts:write"), false},
		{"p-reject", "before_tool_call", "FORBIDDEN", pathEnvelope(t, "p-reject", pathIn{ID: "reject-me"}, "broadcasts:write"), false},
		{"p-invalid", "validate_input", "VALIDATION_ERROR", pathEnvelope(t, "p-invalid", map[string]any{"id": 7}, "broadcasts:write"), true},
		{"p-noscope", "before_handle", "FORBIDDEN", pathEnvelope(t, "p-noscope", pathIn{ID: "b2"}), false},
		{"p-app", "handler", "NOT_FOUND", pathEnvelope(t, "p-app", pathIn{ID: "b3", Mode: "app"}, "broadcasts:write"), false},
		{"p-raw", "handler", "INTERNAL_SERVER_ERROR", pathEnvelope(t, "p-raw", pathIn{ID: "b4", Mode: "raw"}, "broadcasts:write"), true},
		{"p-panic", "handler", "INTERNAL_SERVER_ERROR", pathEnvelope(t, "p-panic", pathIn{ID: "b5", Mode: "panic"}, "broadcasts:write"), true},
		{"p-timeout", "handler", "TIMEOUT", pathEnvelope(t, "p-timeout", pathIn{ID: "b6", Mode: "slow"}, "broadcasts:write"), true},
		{"p-unknown", "decode", "BAD_REQUEST", []byte(`{"mcpfn":"1","callId":"p-unknown","params":{"name":"nope","arguments":{}}}`), false},
		{"p-version", "decode", "BAD_REQUEST", []byte(`{"mcpfn":"7","callId":"p-version","params":{"name":"broadcast_delete"}}`), false},
	}
	for _, tc := range cases {
		invokeLambdaWithin(t, fn, tc.payload, "Root="+lambdaRoot+";Parent="+lambdaParent+";Sampled=1", 1500*time.Millisecond)
	}
	// A payload in no format has no call id of its own: its row is keyed
	// by the Lambda request id.
	invokeLambdaWithin(t, fn, []byte(`{"hello":"world"}`), "", time.Second)

	items := e.items(t)
	if len(items) != len(cases)+1 {
		t.Fatalf("%d rows for %d invocations", len(items), len(cases)+1)
	}
	for _, tc := range cases {
		it := e.item(t, tc.callID)
		if it == nil {
			t.Errorf("%s: no row", tc.callID)
			continue
		}
		ok := tc.code == ""
		if str(it, "status") != audit.StatusDone || str(it, "stage") != tc.stage || str(it, "errorCode") != tc.code || boolAttr(it, "ok") != ok {
			t.Errorf("%s: status=%s stage=%s code=%s ok=%v", tc.callID, str(it, "status"), str(it, "stage"), str(it, "errorCode"), boolAttr(it, "ok"))
		}
		if (str(it, "rawError") != "") != tc.raw {
			t.Errorf("%s: rawError %q (want present=%v)", tc.callID, str(it, "rawError"), tc.raw)
		}
	}
	if raw := str(e.item(t, "p-raw"), "rawError"); !strings.Contains(raw, "10.0.0.7:5432") {
		t.Errorf("the audit keeps the raw cause the caller never saw: %q", raw)
	}
	if raw := str(e.item(t, "p-panic"), "rawError"); !strings.Contains(raw, "handler exploded on b5") {
		t.Errorf("panic value: %q", raw)
	}
	var unknown map[string]types.AttributeValue
	for _, it := range items {
		if str(it, "source") == "unknown" {
			unknown = it
		}
	}
	if unknown == nil || str(unknown, "errorCode") != "BAD_REQUEST" || str(unknown, "stage") != "decode" {
		t.Errorf("the payload in no format left no proper row: %v", unknown)
	}
}

// TestAdapterProcessDeathLeavesThePendingRow: a destructive call whose process
// dies mid-handler (no AfterToolCall ever runs) still leaves evidence.
func TestAdapterProcessDeathLeavesThePendingRow(t *testing.T) {
	if os.Getenv("MCPFN_TEST_DIE_TABLE") != "" {
		return // this is the child; TestAdapterDyingChild does the work
	}
	e := newEnv(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestAdapterDyingChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "MCPFN_TEST_DIE_TABLE="+e.table, "MCPFN_DYNAMODB_ENDPOINT="+e.server.Endpoint())
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("the child should die with status 3 mid-handler: %v\n%s", err, out)
	}
	it := e.item(t, "call-dies")
	if it == nil {
		t.Fatalf("no row survived the crash; child output:\n%s", out)
	}
	if str(it, "status") != audit.StatusPending || str(it, "tool") != "broadcast_delete" || str(it, "entityKey") != "" {
		t.Errorf("row: %v", it)
	}
	if !strings.Contains(str(it, "argsPreview"), "b-dies") || str(it, "callerSubject") != "user-7" {
		t.Errorf("the pending row must say who called what: %v", it)
	}
}

// TestAdapterDyingChild runs only as the child of the test above.
func TestAdapterDyingChild(t *testing.T) {
	table := os.Getenv("MCPFN_TEST_DIE_TABLE")
	if table == "" {
		t.Skip("runs only as a child process of TestAdapterProcessDeathLeavesThePendingRow")
	}
	a := audit.New(audit.Config{Table: table, Client: clientFor(os.Getenv("MCPFN_DYNAMODB_ENDPOINT"))})
	fn := newFunction(pathTool(t), adapter.WithAuditor(a))
	invokeLambda(t, fn, pathEnvelope(t, "call-dies", pathIn{ID: "b-dies", Mode: "exit"}, "broadcasts:write"), "")
	t.Fatal("the handler should have ended the process")
}

func boolAttr(item map[string]types.AttributeValue, name string) bool {
	b, ok := item[name].(*types.AttributeValueMemberBOOL)
	return ok && b.Value
}
