package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/handlers"
	"github.com/mcpfn/mcpfn/internal/dynamolocal"
	"github.com/mcpfn/mcpfn/internal/lambdatest"
	"github.com/mcpfn/mcpfn/internal/samtemplate"
	"github.com/mcpfn/mcpfn/wire"
)

func TestMain(m *testing.M) { dynamolocal.Main(m) }

// app is every tool bound to one fresh table, each served by the adapter
// exactly as its Lambda function serves it, so a test call goes through
// decode, validation, the scope gate and the audit stage like a real one.
type app struct {
	store      *handlers.Store
	db         *dynamodb.Client
	rows       *rowLog // the rows as the adapter handed them over
	auditTable string  // the rows as the real auditor wrote them
	fallback   *lockedBuffer
	fns        map[string]*adapter.Function
}

func newApp(t *testing.T) *app {
	t.Helper()
	ddb := dynamolocal.ForTest(t)
	ctx := t.Context()
	table := dynamolocal.UniqueName(t, "broadcasts")
	auditTable := dynamolocal.UniqueName(t, "audit")
	for id, name := range map[string]string{"BroadcastsTable": table, "AuditTable": auditTable} {
		if err := ddb.CreateTable(ctx, templateTable(t, id, name)); err != nil {
			t.Fatal(err)
		}
	}
	a := &app{db: ddb.Client(ctx), rows: &rowLog{}, auditTable: auditTable, fallback: &lockedBuffer{}, fns: map[string]*adapter.Function{}}
	a.store = handlers.NewStore(a.db, table)
	auditor := audit.New(audit.Config{Table: auditTable, Client: a.db, Fallback: a.fallback})
	for _, tool := range handlers.Tools(a.store) {
		a.fns[tool.Name()] = adapter.New(tool, adapter.WithAuditor(teeRecorder{a.rows, auditor}),
			adapter.WithCallVerifier(lambdatest.Verifier("fn-"+tool.Name())))
	}
	return a
}

// templateTable is a table of template.yaml, so the tests run against the
// key schemas and indexes that deploy.
func templateTable(t *testing.T, logicalID, name string) *dynamodb.CreateTableInput {
	t.Helper()
	tpl, err := samtemplate.LoadRepo()
	if err != nil {
		t.Fatal(err)
	}
	in, err := tpl.TableInput(logicalID, name)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// teeRecorder hands every row to each recorder in turn.
type teeRecorder []adapter.Recorder

func (rs teeRecorder) Pending(ctx context.Context, row *audit.Row) (prior *audit.Row, err error) {
	for _, r := range rs {
		c := *row
		p, e := r.Pending(ctx, &c)
		if prior == nil && err == nil {
			prior, err = p, e
		}
	}
	return prior, err
}

func (rs teeRecorder) Late(ctx context.Context, row *audit.Row) {
	for _, r := range rs {
		c := *row
		r.Late(ctx, &c)
	}
}

func (rs teeRecorder) Record(ctx context.Context, row *audit.Row) {
	for _, r := range rs {
		c := *row
		r.Record(ctx, &c)
	}
}

// lockedBuffer is the auditor's fallback writer: a row that could not be
// written lands here, and a test that expects none checks it stays empty.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// auditRows reads every row the auditor wrote, by call id.
func (a *app) auditRows(t *testing.T) map[string]audit.Row {
	t.Helper()
	rows := map[string]audit.Row{}
	p := dynamodb.NewScanPaginator(a.db, &dynamodb.ScanInput{TableName: &a.auditTable, ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var batch []audit.Row
		if err := attributevalue.UnmarshalListOfMaps(page.Items, &batch); err != nil {
			t.Fatal(err)
		}
		for _, r := range batch {
			if _, dup := rows[r.CallID]; dup {
				t.Fatalf("two audit rows for call %s", r.CallID)
			}
			rows[r.CallID] = r
		}
	}
	return rows
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
	out, err := a.function(t, tool).Invoke(context.Background(), envelope(t, callID, caller, tool, args, nil))
	if err != nil {
		t.Fatalf("%s: Invoke: %v", tool, err)
	}
	return decodeResult(t, tool, out)
}

// function is tool's function, as its Lambda function serves it.
func (a *app) function(t *testing.T, tool string) *adapter.Function {
	t.Helper()
	fn := a.fns[tool]
	if fn == nil {
		t.Fatalf("no function for tool %q", tool)
	}
	return fn
}

// envelope is a signed mcpfn envelope of one call, as the gateway sends it;
// stream asks for a streamed answer (progress, log messages).
func envelope(t *testing.T, callID string, caller *adapter.Identity, tool string, args any, stream *wire.StreamRequest) []byte {
	t.Helper()
	rawArgs, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := json.Marshal(wire.Envelope{
		Version: wire.EnvelopeVersion,
		CallID:  callID,
		Params:  wire.EnvelopeParams{Name: tool, Arguments: rawArgs},
		MCP:     wire.EnvelopeMCP{Era: adapter.EraModern, Method: "tools/call", ProtocolVersion: wire.ModernProtocolVersion},
		// Signed as the gateway signs a call to the tool's function.
		CallToken: lambdatest.Token("fn-"+tool, tool, callID, caller, rawArgs),
		Stream:    stream,
	})
	if err != nil {
		t.Fatal(err)
	}
	return payload
}

// decodeResult decodes a function's response payload.
func decodeResult(t *testing.T, tool string, out []byte) result {
	t.Helper()
	var resp wire.EnvelopeResponse
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

func (l *rowLog) Pending(_ context.Context, row *audit.Row) (*audit.Row, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pending = append(l.pending, row)
	return nil, nil
}

func (l *rowLog) Late(context.Context, *audit.Row) {}

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
