package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/modelcontextprotocol/go-sdk/mcp"

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

// callOf reads every row of callID and joins them (audit.JoinCalls).
func callOf(t *testing.T, client *dynamodb.Client, table, callID string) (audit.Call, []map[string]types.AttributeValue) {
	t.Helper()
	items := rowsOf(t, client, table, callID)
	var rows []audit.Row
	for _, it := range items {
		var r audit.Row
		if err := attributevalue.UnmarshalMap(it, &r); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	calls := audit.JoinCalls(rows)
	if len(calls) != 1 {
		t.Fatalf("call %s: %d calls from rows %v", callID, len(calls), items)
	}
	return calls[0], items
}

// The gateway's rows are its own (ADR 0015): keyed "gateway#<callId>",
// always final, never in the way of the function's rows. A call the
// function never saw has the gateway's row only; one that reached Lambda
// without an answer has it with outcome "unknown" and, if the function
// ran, the function's own row too, which is the call's outcome; a call the
// function answered has no gateway row.
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

	// gatewayOnly checks a call whose only row is the gateway's.
	gatewayOnly := func(t *testing.T, callID, tool, code, outcome string) {
		t.Helper()
		c, items := callOf(t, client, table, callID)
		if len(items) != 1 || c.Gateway == nil || c.OutcomeBy != audit.OutcomeByGateway {
			t.Fatalf("call %s: rows %v, want the gateway's row only", callID, items)
		}
		r := items[0]
		if attr(r, "rowKey") != "gateway#"+callID || attr(r, "writer") != audit.GatewayWriter ||
			attr(r, "errorCode") != code || attr(r, "stage") != "gateway" || attr(r, "status") != audit.StatusDone ||
			attr(r, "outcome") != outcome || attr(r, "attemptId") != "" ||
			attr(r, "tool") != tool || attr(r, "callerSubject") != "alice" || attr(r, "ok") != "false" ||
			attr(r, "clientName") != "auditing-client" {
			t.Errorf("row %v", r)
		}
	}

	for _, c := range []struct {
		name, tool, fn string
		h              http.HandlerFunc
		code, outcome  string
	}{
		{"throttled", "flaky_get", "fn-flaky", throttle429, "RATE_LIMITED", ""},
		{"function missing", "flaky_get", "fn-flaky", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Amzn-ErrorType", "ResourceNotFoundException")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"Type":"User","message":"Function not found"}`))
		}, "INTERNAL_SERVER_ERROR", ""},
		// Lambda had the request: the function may have run. The gateway
		// says so; its row is final all the same (nothing will complete
		// it), under its own key.
		{"invoke failed after sending", "flaky_delete", "fn-flaky-delete", serviceError500, "UNAVAILABLE", audit.OutcomeUnknown},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.api.setMisbehave(c.fn, c.h)
			defer e.api.setMisbehave(c.fn, nil)
			te := toolErrorOf(t, callTool(t, cs, c.tool, map[string]any{"entityId": "a-1"}))
			gatewayOnly(t, te.callID(), c.tool, c.code, c.outcome)
		})
	}

	// A retried Invoke whose first attempt may have run and whose last was
	// throttled: the call may have run.
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
	gatewayOnly(t, te.callID(), "flaky_get", "RATE_LIMITED", audit.OutcomeUnknown)

	// The function ran and wrote its rows (pending, then final), then the
	// Invoke failed: both rows stay, each under its writer's key; the
	// function's is the call's outcome.
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
	if c, items := callOf(t, client, table, te.callID()); len(items) != 2 || c.OutcomeBy != audit.OutcomeByFunction ||
		c.Function.Status != audit.StatusDone || !c.Function.OK || c.Function.Writer != "flaky_delete" ||
		c.Gateway.ErrorCode != "UNAVAILABLE" || c.Gateway.Outcome != audit.OutcomeUnknown || c.Gateway.Status != audit.StatusDone {
		t.Errorf("ran, then the Invoke failed: rows %v", items)
	}

	// The function answered: its own row, none from the gateway.
	before := rec.count()
	f := factsFrom(t, callTool(t, cs, "echo_call", map[string]any{"entityId": "a-2"}))
	if c, items := callOf(t, client, table, f.CallID); len(items) != 1 || c.Gateway != nil || attr(items[0], "stage") == "gateway" {
		t.Errorf("answered call: rows %v", items)
	}
	if got := rec.count() - before; got != 0 {
		t.Errorf("the gateway wrote %d rows for a call the function answered", got)
	}
}

// A streamed call (a progress token: InvokeWithResponseStream) that the
// function answered leaves the function's row and none of the gateway's.
// Before, the streamed path marked every call "may have run" and its
// success never cleared it: the gateway wrote a pending row for each, which
// refused the function's own row or was left pending beside it.
func TestStreamedAnswerLeavesNoGatewayRow(t *testing.T) {
	aud, client, table := auditTable(t)
	rec := &countingRecorder{Recorder: aud}
	tool := streamTool(nil)
	e := newEnv(t, func(c *Config) {
		c.Recorder = rec
		c.Tools = append(c.Tools, tool)
		c.Functions["progress_wait"] = "fn-progress"
	})
	e.api.mu.Lock()
	e.api.functions["fn-progress"] = adapter.New(tool, adapter.WithAuditor(aud), adapter.WithLogger(e.cfgUsed.Logger), adapter.WithCallVerifier(e.verifiers["fn-progress"]))
	e.api.mu.Unlock()
	cs := e.mustConnect(t, "streaming-client", "", bearer(e.iss.token(t, "alice", nil)))
	const n = 5
	for i := range n {
		params := &mcp.CallToolParams{Name: "progress_wait", Arguments: waitIn{}}
		params.SetProgressToken(i)
		res, err := cs.CallTool(t.Context(), params)
		if err != nil || res.IsError {
			t.Fatalf("call %d: %v %s", i, err, textOf(res))
		}
	}
	if got := rec.count(); got != 0 {
		t.Errorf("the gateway wrote %d rows for %d streamed calls the function answered", got, n)
	}
	out, err := client.Scan(t.Context(), &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Items) != n {
		t.Fatalf("%d rows for %d streamed calls, want one each", len(out.Items), n)
	}
	for _, it := range out.Items {
		if attr(it, "writer") != "progress_wait" || attr(it, "status") != audit.StatusDone || attr(it, "ok") != "true" {
			t.Errorf("row %v, want the function's final row", it)
		}
	}
}

// deadlineRecorder notes whether the gateway bounded a row's write with a
// deadline of its own.
type deadlineRecorder struct {
	adapter.Recorder
	withDeadline atomic.Int32
}

func (d *deadlineRecorder) Record(ctx context.Context, r *audit.Row) {
	if _, ok := ctx.Deadline(); ok {
		d.withDeadline.Add(1)
	}
	d.Recorder.Record(ctx, r)
}

// TestBurstOfRefusedCallsLeavesEveryGatewayRow (issue 21): a long-lived
// gateway refuses a burst of calls at once (Lambda throttles them all:
// RATE_LIMITED, or whatever else a loaded machine makes of 120 Invokes at
// once), and each refusal's row is written before its answer, through a
// proxy that counts DynamoDB requests in flight: every call has its
// gateway row in the table with the code it was answered with, no more
// than the Auditor's MaxInFlight writes were ever in flight, and the
// gateway put no deadline of its own on any write (the Auditor's budget
// starts when the write does, not when it was queued).
// Before, each row had 5 s from the refusal, queue included, and 190
// refusals at once on a busy machine left rows as fallback lines.
func TestBurstOfRefusedCallsLeavesEveryGatewayRow(t *testing.T) {
	_, client, table := auditTable(t)
	u, err := url.Parse(dynamolocal.ForTest(t).Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	var mu sync.Mutex
	var inFlight, most int
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		mu.Unlock()
		defer func() {
			mu.Lock()
			inFlight--
			mu.Unlock()
		}()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	var fb lockedBuffer
	aud := audit.New(audit.Config{Table: table, Fallback: &fb, Client: dynamodb.New(dynamodb.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(proxy.URL),
		Credentials: credentials.NewStaticCredentialsProvider("mcpfnlocal", "mcpfnlocal", "")})})
	rec := &deadlineRecorder{Recorder: aud}
	e := newEnv(t, func(c *Config) { c.Recorder = rec })
	e.api.setMisbehave("fn-flaky", throttle429)
	cs := e.mustConnect(t, "bursting-client", "", bearer(e.iss.token(t, "alice", nil)))

	const n = 60
	answers := make([]toolError, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "flaky_get", Arguments: map[string]any{"entityId": fmt.Sprintf("b-%d", i)}})
			if err != nil || !res.IsError || json.Unmarshal([]byte(textOf(res)), &answers[i]) != nil || answers[i].callID() == "" {
				t.Errorf("call %d: %v %+v", i, err, res)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	out, err := client.Scan(t.Context(), &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]string{}
	for _, it := range out.Items {
		if attr(it, "writer") == audit.GatewayWriter {
			codes[attr(it, "callId")] = attr(it, "errorCode")
		}
	}
	for i, a := range answers {
		if code, ok := codes[a.callID()]; !ok || code != a.Error {
			t.Errorf("call %d (%s), answered %s: gateway row %t with code %q; fallback lines:\n%.2000s", i, a.callID(), a.Error, ok, code, fb.String())
		}
	}
	if most > audit.DefaultMaxInFlight {
		t.Errorf("%d DynamoDB requests in flight at once, want at most %d", most, audit.DefaultMaxInFlight)
	}
	if got := rec.withDeadline.Load(); got != 0 {
		t.Errorf("%d of %d rows were written under a deadline of the gateway's own", got, n)
	}
}

// lockedBuffer is a bytes.Buffer safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
