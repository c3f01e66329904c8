package mcpfntest_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/mcpfntest"
)

// only returns the one row of res, failing unless there is exactly one.
func only(t *testing.T, res *mcpfntest.Result) audit.Row {
	t.Helper()
	if len(res.Rows) != 1 {
		t.Fatalf("%d rows, want 1: %+v", len(res.Rows), res.Rows)
	}
	return res.Rows[0]
}

func TestCallReturnsTheTypedOutputAndItsFinalRow(t *testing.T) {
	tool := noteAdd.Bind(newNotebook())
	res := mcpfntest.Call(t, tool, map[string]any{"text": "buy milk"}, mcpfntest.As("ann", scopeWrite, "notes:secret-scope"))
	if got := mcpfntest.Output[addOut](t, res); got.ID != "n1" {
		t.Fatalf("output %+v", got)
	}
	if res.IsError || res.Err != nil || res.Code() != "" || res.Rounds != 1 || res.RPCError != nil {
		t.Fatalf("a successful call: %+v", res)
	}
	row := only(t, res)
	for what, ok := range map[string]bool{
		"status done":            row.Status == audit.StatusDone,
		"ok":                     row.OK,
		"stage done":             row.Stage == string(adapter.StageDone),
		"tool":                   row.Tool == "note_add" && row.Writer == "note_add",
		"source envelope":        row.Source == string(adapter.SourceEnvelope),
		"caller ann by jwt":      row.CallerSubject == "ann" && row.CallerAuthMethod == "jwt",
		"dimension":              row.Dimensions["entityId"] == "n1",
		"modern tools/call":      row.MCPEra == "modern" && row.MCPMethod == "tools/call" && row.MCPOutcome == "complete" && row.MCPRound == 1,
		"call id":                row.CallID != "",
		"a trace of its own":     row.TraceID != "" && row.SpanID != "" && row.ParentSpanID == "",
		"raw arguments, handed":  string(row.Arguments) == `{"text":"buy milk"}`,
		"no error":               row.ErrorCode == "" && row.RawError == "",
		"lambda request id":      row.LambdaRequestID != "",
		"not destructive":        !row.Destructive,
		"result bytes counted":   row.ResultBytes == len(res.CallToolResult),
		"no unverified claimant": row.UnverifiedCaller == "",
	} {
		if !ok {
			t.Errorf("row: not %s: %+v", what, row)
		}
	}
	// The caller's scopes authorise the call; no row keeps them.
	b, err := json.Marshal(row)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "notes:") {
		t.Errorf("the row leaks the caller's scopes: %s", b)
	}
}

func TestTheDefaultCallerHoldsTheToolsScopes(t *testing.T) {
	res := mcpfntest.Call(t, noteAdd.Bind(newNotebook()), map[string]any{"text": "x"})
	mcpfntest.Output[addOut](t, res)
	if row := only(t, res); row.CallerSubject != mcpfntest.DefaultSubject {
		t.Fatalf("caller %q, want %q", row.CallerSubject, mcpfntest.DefaultSubject)
	}
}

func TestAScopedToolRefusesAndEachRefusalLeavesARow(t *testing.T) {
	nb := newNotebook()
	f := mcpfntest.New(t, noteAdd.Bind(nb))
	args := map[string]any{"text": "x"}
	for _, tc := range []struct {
		name    string
		opt     mcpfntest.Option
		code    adapter.Code
		subject string
	}{
		{"anonymous", mcpfntest.Anonymous(), adapter.CodeUnauthorized, ""},
		{"bob without the scope", mcpfntest.As("bob", "notes:read"), adapter.CodeForbidden, "bob"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := f.Call(t, args, tc.opt)
			if !res.IsError || res.Code() != tc.code {
				t.Fatalf("got %+v, want %s", res.Err, tc.code)
			}
			row := only(t, res)
			if row.OK || row.ErrorCode != string(tc.code) || row.Stage != string(adapter.StageBeforeHandle) || row.CallerSubject != tc.subject {
				t.Fatalf("row %+v", row)
			}
		})
	}
	if len(nb.notes) != 0 {
		t.Fatalf("a refused call ran: %v", nb.notes)
	}
	if res := f.Call(t, args, mcpfntest.As("bob", "notes:read")); string(mustJSON(t, res.Err.Details)) != `{"missingScopes":["notes:write"]}` {
		t.Errorf("FORBIDDEN details %s", mustJSON(t, res.Err.Details))
	}
}

func TestAValidationErrorNamesTheIssue(t *testing.T) {
	res := mcpfntest.Call(t, noteAdd.Bind(newNotebook()), map[string]any{"text": ""})
	if res.Code() != adapter.CodeValidation || res.Err.Retryable {
		t.Fatalf("got %+v", res.Err)
	}
	if !strings.Contains(string(mustJSON(t, res.Err.Details)), "/text") {
		t.Errorf("details %s do not point at /text", mustJSON(t, res.Err.Details))
	}
	if row := only(t, res); row.ErrorCode != string(adapter.CodeValidation) || row.Stage != string(adapter.StageValidateInput) || row.ErrorDetails == nil {
		t.Fatalf("row %+v", row)
	}
	// No arguments at all are {}, which lacks the required text.
	if res := mcpfntest.Call(t, noteAdd.Bind(newNotebook()), nil); res.Code() != adapter.CodeValidation {
		t.Fatalf("nil arguments: %+v", res.Err)
	}
}

func TestAPanicReachesTheCallerScrubbedAndTheRowWhole(t *testing.T) {
	res := mcpfntest.Call(t, boom, nil)
	if res.Code() != adapter.CodeInternal || res.Err.Message != "Internal server error" {
		t.Fatalf("got %+v", res.Err)
	}
	if strings.Contains(string(res.CallToolResult), "10.0.0.7") || strings.Contains(string(res.CallToolResult), "password") {
		t.Fatalf("the caller reads the raw panic: %s", res.CallToolResult)
	}
	row := only(t, res)
	if !row.Panicked || !strings.Contains(row.RawError, boomMessage) || row.ErrorCode != string(adapter.CodeInternal) || row.Stage != string(adapter.StageHandler) {
		t.Fatalf("row %+v", row)
	}
}

func TestTenantSessionAndMetaReachTheCallAndItsRow(t *testing.T) {
	const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	res := mcpfntest.Call(t, echo, map[string]any{"text": "hi"}, mcpfntest.As("ann"), mcpfntest.Tenant("acme"),
		mcpfntest.Session("s-1"), mcpfntest.Meta(map[string]any{"traceparent": traceparent}))
	if got := mcpfntest.Output[echoOut](t, res); got != (echoOut{Text: "hi", Tenant: "acme", Session: "s-1"}) {
		t.Fatalf("output %+v", got)
	}
	row := only(t, res)
	if row.Tenant != "acme" || row.CallerSubject != "ann" || row.SessionID != "s-1" {
		t.Fatalf("row %+v", row)
	}
	// Without an X-Ray header the caller's W3C context is the parent.
	if row.TraceID != "1-0af76519-16cd43dd8448eb211c80319c" || row.ParentSpanID != "b7ad6b7169203331" {
		t.Errorf("trace %s parent %s from traceparent %s", row.TraceID, row.ParentSpanID, traceparent)
	}
}

func TestTraceGivesTheRowsTheTraceAndParent(t *testing.T) {
	const header = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
	nb := newNotebook()
	nb.notes["n7"] = "old"
	const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	res := mcpfntest.Call(t, noteDelete.Bind(nb), map[string]any{"id": "n7"}, mcpfntest.Trace(header),
		mcpfntest.Meta(map[string]any{"traceparent": traceparent}))
	mcpfntest.Output[deleteOut](t, res)
	if len(res.Rows) != 2 {
		t.Fatalf("%d rows", len(res.Rows))
	}
	for _, row := range res.Rows {
		if row.TraceID != "1-5759e988-bd862e3fe1be46a994272793" || row.ParentSpanID != "53995c3f42cd8ad8" || row.Sampled != "1" || row.LinkedTraceparent != traceparent {
			t.Errorf("%s row: trace %s parent %s sampled %q link %q", row.Status, row.TraceID, row.ParentSpanID, row.Sampled, row.LinkedTraceparent)
		}
	}
	if res.Rows[0].SpanID != res.Rows[1].SpanID {
		t.Errorf("pending and final rows name spans %s and %s", res.Rows[0].SpanID, res.Rows[1].SpanID)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
