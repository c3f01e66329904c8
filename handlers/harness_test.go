package handlers_test

import (
	"bytes"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/handlers"
	"github.com/mcpfn/mcpfn/mcpfntest"
)

func TestMain(m *testing.M) { mcpfntest.Main(m) }

// app is every tool bound to one fresh broadcasts table and attachments
// bucket, each served by mcpfntest as its Lambda function serves it, so a
// test call goes through the call token, decoding, validation, the scope
// gate and the audit stage like a real one. The real auditor writes every
// row into an audit table too, and decides, as deployed, whether a
// destructive call may run.
type app struct {
	store      *handlers.Store
	db         *dynamodb.Client
	s3         *s3.Client    // the attachments bucket's S3, to look behind the tools' backs
	auditTable string        // the rows as the real auditor wrote them
	fallback   *lockedBuffer // the rows it could not write
	fns        map[string]*mcpfntest.Function
}

func newApp(t *testing.T) *app {
	t.Helper()
	db := mcpfntest.DynamoDB(t)
	objects := mcpfntest.S3(t)
	a := &app{db: db.Client(), s3: objects.Client(), auditTable: db.Table(t, "AuditTable"), fallback: &lockedBuffer{}, fns: map[string]*mcpfntest.Function{}}
	a.store = handlers.NewStore(a.db, db.Table(t, "BroadcastsTable")).WithAttachments(a.s3, objects.Bucket(t, "AttachmentsBucket"))
	auditor := audit.New(audit.Config{Table: a.auditTable, Client: a.db, Fallback: a.fallback})
	for _, tool := range handlers.Tools(a.store) {
		a.fns[tool.Name()] = mcpfntest.New(t, tool, mcpfntest.AuditTo(auditor))
	}
	return a
}

// The callers of the tests.
var (
	// writer is a verified caller holding the write scope.
	writer = mcpfntest.As("user-writer", handlers.ScopeWrite)
	// reader is a verified caller without it.
	reader = mcpfntest.As("user-reader")
	// anonymous is no verified caller at all.
	anonymous = mcpfntest.Anonymous()
)

// call calls tool as the gateway does, under a fresh call id unless opts
// give one.
func (a *app) call(t *testing.T, tool string, args any, opts ...mcpfntest.Option) *mcpfntest.Result {
	t.Helper()
	fn := a.fns[tool]
	if fn == nil {
		t.Fatalf("no function for tool %q", tool)
	}
	return fn.Call(t, args, opts...)
}

// wantCode fails the test unless r is an error result with code.
func wantCode(t *testing.T, r *mcpfntest.Result, code adapter.Code) {
	t.Helper()
	if !r.IsError {
		t.Fatalf("got success %s, want %s", r.Structured, code)
	}
	if r.Code() != code {
		t.Fatalf("got %s (%s), want %s", r.Code(), r.Err.Message, code)
	}
}

// rows returns what every function handed its audit: the final rows by call
// id (a call with two fails the test) and the write-ahead rows.
func (a *app) rows(t *testing.T) (final map[string]audit.Row, pending []audit.Row) {
	t.Helper()
	final = map[string]audit.Row{}
	for _, fn := range a.fns {
		for _, r := range fn.Rows() {
			switch {
			case r.Status == audit.StatusPending:
				pending = append(pending, r)
			case final[r.CallID].CallID != "":
				t.Fatalf("call %s has two final audit rows", r.CallID)
			default:
				final[r.CallID] = r
			}
		}
	}
	return final, pending
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
