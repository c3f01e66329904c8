package gateway

import (
	"context"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/internal/dynamolocal"
	"github.com/mcpfn/mcpfn/internal/lambdatest"
	"github.com/mcpfn/mcpfn/internal/samtemplate"
)

func TestMain(m *testing.M) { dynamolocal.Main(m) }

// countingRecorder counts the rows the gateway hands its auditor.
type countingRecorder struct {
	adapter.Recorder
	mu   sync.Mutex
	rows []audit.Row
}

func (c *countingRecorder) Pending(ctx context.Context, r *audit.Row) (*audit.Row, error) {
	c.mu.Lock()
	c.rows = append(c.rows, *r)
	c.mu.Unlock()
	return c.Recorder.Pending(ctx, r)
}

func (c *countingRecorder) Record(ctx context.Context, r *audit.Row) {
	c.mu.Lock()
	c.rows = append(c.rows, *r)
	c.mu.Unlock()
	c.Recorder.Record(ctx, r)
}

func (c *countingRecorder) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.rows)
}

// auditTable creates template.yaml's AuditTable in the shared DynamoDB Local
// and returns an auditor on it and a client to read it.
func auditTable(t *testing.T) (*audit.Auditor, *dynamodb.Client, string) {
	t.Helper()
	srv := dynamolocal.ForTest(t)
	ctx := context.Background()
	name := dynamolocal.UniqueName(t, "audit")
	tmpl, err := samtemplate.LoadRepo()
	if err != nil {
		t.Fatal(err)
	}
	in, err := tmpl.TableInput("AuditTable", name)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.CreateTable(ctx, in); err != nil {
		t.Fatal(err)
	}
	client := srv.Client(ctx)
	return audit.New(audit.Config{Table: name, Client: client, Fallback: io.Discard}), client, name
}

func rowsOf(t *testing.T, client *dynamodb.Client, table, callID string) []map[string]types.AttributeValue {
	t.Helper()
	// Rows are keyed <writer>#<callId>: every row of the call, whoever
	// wrote it.
	out, err := client.Scan(context.Background(), &dynamodb.ScanInput{
		TableName:                 aws.String(table),
		FilterExpression:          aws.String("callId = :c"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":c": &types.AttributeValueMemberS{Value: callID}},
		ConsistentRead:            aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Items
}

func attr(item map[string]types.AttributeValue, name string) string {
	switch v := item[name].(type) {
	case *types.AttributeValueMemberS:
		return v.Value
	case *types.AttributeValueMemberBOOL:
		if v.Value {
			return "true"
		}
		return "false"
	}
	return ""
}

func TestCallsTheFunctionNeverSawLeaveOneGatewayRow(t *testing.T) {
	aud, client, table := auditTable(t)
	rec := &countingRecorder{Recorder: aud}
	e := newEnv(t, func(c *Config) { c.Recorder = rec })
	// The functions audit into the same table, as deployed.
	e.api.mu.Lock()
	for fn, tool := range map[string]*adapter.Tool{"fn-echo": e.cat.echo, "fn-flaky": e.cat.flaky, "fn-flaky-delete": e.cat.flakyDelete} {
		e.api.functions[fn] = adapter.New(tool, adapter.WithAuditor(aud), adapter.WithLogger(e.cfgUsed.Logger), adapter.WithCallVerifier(e.verifiers[fn]))
	}
	e.api.mu.Unlock()
	cs := e.mustConnect(t, "auditing-client", "", bearer(e.iss.token(t, "alice", nil)))

	for _, c := range []struct {
		name, tool, fn string
		h              http.HandlerFunc
		code, status   string
	}{
		{"throttled", "flaky_get", "fn-flaky", throttle429, "RATE_LIMITED", audit.StatusDone},
		{"function missing", "flaky_get", "fn-flaky", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Amzn-ErrorType", "ResourceNotFoundException")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"Type":"User","message":"Function not found"}`))
		}, "INTERNAL_SERVER_ERROR", audit.StatusDone},
		// Lambda had the request: the function may yet write its own row,
		// which the gateway's pending row must not pre-empt.
		{"invoke failed after sending", "flaky_delete", "fn-flaky-delete", serviceError500, "UNAVAILABLE", audit.StatusPending},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.api.setMisbehave(c.fn, c.h)
			defer e.api.setMisbehave(c.fn, nil)
			te := toolErrorOf(t, callTool(t, cs, c.tool, map[string]any{"entityId": "a-1"}))
			rows := rowsOf(t, client, table, te.callID())
			if len(rows) != 1 {
				t.Fatalf("%d rows for call %s, want 1", len(rows), te.callID())
			}
			r := rows[0]
			if attr(r, "errorCode") != c.code || attr(r, "stage") != "gateway" || attr(r, "status") != c.status ||
				attr(r, "tool") != c.tool || attr(r, "callerSubject") != "alice" || attr(r, "ok") != "false" ||
				attr(r, "clientName") != "auditing-client" {
				t.Errorf("row %v", r)
			}
		})
	}

	// A retried Invoke whose first attempt may have run and whose last was
	// throttled: the call may have run, so the row is pending.
	var attempt int
	var amu sync.Mutex
	e.api.setMisbehave("fn-flaky", func(w http.ResponseWriter, r *http.Request) {
		amu.Lock()
		attempt++
		n := attempt
		amu.Unlock()
		if n == 1 {
			serviceError500(w, r)
			return
		}
		throttle429(w, r)
	})
	te := toolErrorOf(t, callTool(t, cs, "flaky_get", map[string]any{"entityId": "a-4"}))
	e.api.setMisbehave("fn-flaky", nil)
	if rows := rowsOf(t, client, table, te.callID()); len(rows) != 1 || attr(rows[0], "status") != audit.StatusPending || attr(rows[0], "errorCode") != "RATE_LIMITED" {
		t.Errorf("500 then 429: rows %v", rows)
	}

	// The function ran and wrote its row, then the Invoke failed: the
	// function's row stays, the gateway's pending row does not replace it.
	e.api.setMisbehave("fn-flaky-delete", func(w http.ResponseWriter, r *http.Request) {
		payload, _ := io.ReadAll(r.Body)
		ctx, cancel := lambdatest.Context(r.Context(), lambdatest.Invocation{RequestID: "ran-then-500", Timeout: 10 * time.Second})
		defer cancel()
		if _, err := e.api.functions["fn-flaky-delete"].Invoke(ctx, payload); err != nil {
			t.Error(err)
		}
		serviceError500(w, r)
	})
	te = toolErrorOf(t, callTool(t, cs, "flaky_delete", map[string]any{"entityId": "a-3"}))
	e.api.setMisbehave("fn-flaky-delete", nil)
	if rows := rowsOf(t, client, table, te.callID()); len(rows) != 1 || attr(rows[0], "stage") == "gateway" || attr(rows[0], "status") != audit.StatusDone || attr(rows[0], "ok") != "true" {
		t.Errorf("ran, then the Invoke failed: rows %v", rows)
	}

	// The function answered: its own row, none from the gateway.
	before := rec.count()
	f := factsFrom(t, callTool(t, cs, "echo_call", map[string]any{"entityId": "a-2"}))
	if rows := rowsOf(t, client, table, f.CallID); len(rows) != 1 || attr(rows[0], "stage") == "gateway" {
		t.Errorf("answered call: rows %v", rows)
	}
	// A tool error the function answered is the function's row too.
	e.api.setMisbehave("fn-flaky", nil)
	if got := rec.count() - before; got != 0 {
		t.Errorf("the gateway wrote %d rows for a call the function answered", got)
	}
}
