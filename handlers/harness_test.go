package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/handlers"
	"github.com/mcpfn/mcpfn/internal/dynamolocal"
	"github.com/mcpfn/mcpfn/internal/samtemplate"
)

func TestMain(m *testing.M) { dynamolocal.Main(m) }

// app is the four tools bound to one fresh table, each served by the adapter
// exactly as its Lambda function serves it, so a test call goes through
// decode, validation, the scope gate and the audit stage like a real one.
type app struct {
	store *handlers.Store
	db    *dynamodb.Client
	rows  *rowLog
	fns   map[string]*adapter.Function
}

func newApp(t *testing.T) *app {
	t.Helper()
	ddb := dynamolocal.ForTest(t)
	ctx := t.Context()
	table := dynamolocal.UniqueName(t, "broadcasts")
	if err := ddb.CreateTable(ctx, broadcastsTableInput(t, table)); err != nil {
		t.Fatal(err)
	}
	a := &app{db: ddb.Client(ctx), rows: &rowLog{}, fns: map[string]*adapter.Function{}}
	a.store = handlers.NewStore(a.db, table)
	for _, tool := range []*adapter.Tool{
		handlers.BroadcastCreate(a.store), handlers.BroadcastGet(a.store),
		handlers.BroadcastList(a.store), handlers.BroadcastDelete(a.store),
	} {
		a.fns[tool.Name()] = adapter.New(tool, adapter.WithAuditor(a.rows))
	}
	return a
}

// broadcastsTableInput is template.yaml's BroadcastsTable, so the tests run
// against the key schema and index that deploy.
func broadcastsTableInput(t *testing.T, name string) *dynamodb.CreateTableInput {
	t.Helper()
	tpl, err := samtemplate.LoadRepo()
	if err != nil {
		t.Fatal(err)
	}
	in, err := tpl.TableInput("BroadcastsTable", name)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// writer is a verified caller holding the write scope.
var writer = &adapter.Identity{Subject: "user-writer", AuthMethod: "jwt", Scopes: []string{handlers.ScopeWrite}}

// reader is a verified caller without it.
var reader = &adapter.Identity{Subject: "user-reader", AuthMethod: "jwt"}

// result is a tool result as the gateway receives it.
type result struct {
	IsError    bool
	Structured json.RawMessage
	Err        struct {
		Error     adapter.Code `json:"error"`
		Message   string       `json:"message"`
		Retryable bool         `json:"retryable"`
		Details   json.RawMessage
		Hint      string
	}
}

var callSeq struct {
	sync.Mutex
	n int
}

func nextCallID(t *testing.T) string {
	callSeq.Lock()
	defer callSeq.Unlock()
	callSeq.n++
	return fmt.Sprintf("%s-call-%d", t.Name(), callSeq.n)
}

// call invokes tool with an mcpfn envelope, as the gateway does, under a
// fresh call id.
func (a *app) call(t *testing.T, caller *adapter.Identity, tool string, args any) result {
	t.Helper()
	return a.callAs(t, nextCallID(t), caller, tool, args)
}

// callAs is call with a given call id (a retry reuses its call's id).
func (a *app) callAs(t *testing.T, callID string, caller *adapter.Identity, tool string, args any) result {
	t.Helper()
	rawArgs, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := json.Marshal(adapter.Envelope{
		Version: adapter.EnvelopeVersion,
		CallID:  callID,
		Params:  adapter.EnvelopeParams{Name: tool, Arguments: rawArgs},
		MCP:     adapter.EnvelopeMCP{Era: adapter.EraModern, Method: "tools/call", ProtocolVersion: adapter.ModernProtocolVersion},
		Caller:  caller,
	})
	if err != nil {
		t.Fatal(err)
	}
	fn := a.fns[tool]
	if fn == nil {
		t.Fatalf("no function for tool %q", tool)
	}
	out, err := fn.Invoke(context.Background(), payload)
	if err != nil {
		t.Fatalf("%s: Invoke: %v", tool, err)
	}
	var resp adapter.EnvelopeResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("%s: response %s: %v", tool, out, err)
	}
	if resp.Error != nil {
		t.Fatalf("%s: protocol error %+v", tool, resp.Error)
	}
	var tr struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
	}
	if err := json.Unmarshal(resp.Result, &tr); err != nil {
		t.Fatalf("%s: result %s: %v", tool, resp.Result, err)
	}
	r := result{IsError: tr.IsError, Structured: tr.StructuredContent}
	if tr.IsError {
		if len(tr.Content) != 1 || json.Unmarshal([]byte(tr.Content[0].Text), &r.Err) != nil {
			t.Fatalf("%s: error result without an error body: %s", tool, resp.Result)
		}
	}
	return r
}

// ok decodes a successful result into T, failing the test on an error result.
func ok[T any](t *testing.T, r result) T {
	t.Helper()
	if r.IsError {
		t.Fatalf("unexpected error result: %s %s (details %s)", r.Err.Error, r.Err.Message, r.Err.Details)
	}
	var v T
	if err := json.Unmarshal(r.Structured, &v); err != nil {
		t.Fatalf("structured content %s: %v", r.Structured, err)
	}
	return v
}

// wantCode fails the test unless r is an error result with code.
func wantCode(t *testing.T, r result, code adapter.Code) {
	t.Helper()
	if !r.IsError {
		t.Fatalf("got success %s, want %s", r.Structured, code)
	}
	if r.Err.Error != code {
		t.Fatalf("got %s (%s), want %s", r.Err.Error, r.Err.Message, code)
	}
}

// rowLog records the audit rows the adapter hands its auditor, so tests can
// check that every call left exactly the rows it should.
type rowLog struct {
	mu      sync.Mutex
	pending []*audit.Row
	done    []*audit.Row
}

func (l *rowLog) Pending(_ context.Context, row *audit.Row) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pending = append(l.pending, row)
}

func (l *rowLog) Record(_ context.Context, row *audit.Row) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.done = append(l.done, row)
}

// byCall indexes the final rows by call id, failing on a call with two.
func (l *rowLog) byCall(t *testing.T) map[string]*audit.Row {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	m := make(map[string]*audit.Row, len(l.done))
	for _, r := range l.done {
		if m[r.CallID] != nil {
			t.Fatalf("call %s has two final audit rows", r.CallID)
		}
		m[r.CallID] = r
	}
	return m
}
