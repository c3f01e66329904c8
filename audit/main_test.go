package audit_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/internal/dynamolocal"
	"github.com/mcpfn/mcpfn/internal/samtemplate"
	"github.com/mcpfn/mcpfn/internal/xraystandin"
)

func TestMain(m *testing.M) { dynamolocal.Main(m) }

// env is one test's slice of the world: its own audit table in the shared
// DynamoDB Local and its own X-Ray daemon stand-in.
type env struct {
	table  string
	server *dynamolocal.Server
	client *dynamodb.Client
	daemon *xraystandin.Daemon
}

func newEnv(t testing.TB) *env {
	t.Helper()
	srv := dynamolocal.ForTest(t)
	ctx := context.Background()
	name := dynamolocal.UniqueName(t, "audit")
	if err := srv.CreateTable(ctx, auditTableInput(t, name)); err != nil {
		t.Fatal(err)
	}
	d, err := xraystandin.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return &env{table: name, server: srv, client: srv.Client(ctx), daemon: d}
}

// auditor returns an Auditor on the env's table, spans to its daemon and
// fallback lines to fb.
func (e *env) auditor(t testing.TB, cfg audit.Config) *audit.Auditor {
	t.Helper()
	if cfg.Table == "" {
		cfg.Table = e.table
	}
	if cfg.Client == nil {
		cfg.Client = e.client
	}
	if cfg.Emitter == nil {
		em, err := audit.NewXRayEmitter(e.daemon.Addr())
		if err != nil {
			t.Fatal(err)
		}
		cfg.Emitter = em
	}
	return audit.New(cfg)
}

func (e *env) items(t testing.TB) []map[string]types.AttributeValue {
	t.Helper()
	var items []map[string]types.AttributeValue
	in := &dynamodb.ScanInput{TableName: aws.String(e.table), ConsistentRead: aws.Bool(true)}
	for {
		out, err := e.client.Scan(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, out.Items...)
		if len(out.LastEvaluatedKey) == 0 {
			return items
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// item is the row of callID, whichever writer put it (nil: none; two
// rows of one call id fail the test).
func (e *env) item(t testing.TB, callID string) map[string]types.AttributeValue {
	t.Helper()
	var found map[string]types.AttributeValue
	for _, it := range e.items(t) {
		if s, ok := it["callId"].(*types.AttributeValueMemberS); ok && s.Value == callID {
			if found != nil {
				t.Fatalf("two rows of call %s", callID)
			}
			found = it
		}
	}
	return found
}

// clientFor is a DynamoDB client aimed at endpoint, built like dynamolocal's
// (static dummy credentials, never the developer's profile).
func clientFor(endpoint string) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("mcpfnlocal", "mcpfnlocal", ""),
	})
}

// closedPort returns a 127.0.0.1 address nobody listens on.
func closedPort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

func str(item map[string]types.AttributeValue, name string) string {
	if s, ok := item[name].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

func waitCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// auditTableInput is template.yaml's AuditTable, so the tests run against
// the table that deploys.
func auditTableInput(t testing.TB, name string) *dynamodb.CreateTableInput {
	t.Helper()
	tmpl, err := samtemplate.LoadRepo()
	if err != nil {
		t.Fatal(err)
	}
	in, err := tmpl.TableInput("AuditTable", name)
	if err != nil {
		t.Fatal(err)
	}
	return in
}
