package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpfn/mcpfn/audit"
)

func TestUnreachableTableFallsBackThenReplays(t *testing.T) {
	e := newEnv(t)
	var fb bytes.Buffer
	down := e.auditor(t, audit.Config{
		Client:   clientFor("http://" + closedPort(t)),
		Fallback: &fb,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	final := baseRow("call-lost")
	down.Record(ctx, final)
	pending := baseRow("call-lost-pending")
	down.Pending(ctx, pending)
	// Real time, loosely bounded: the closed port is a real socket, which a
	// synctest bubble cannot wait on.
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("fallback took %v", took)
	}

	lines := strings.Split(strings.TrimSpace(fb.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d fallback lines, want 2:\n%s", len(lines), fb.String())
	}
	var got struct {
		Marker int       `json:"mcpfnAuditFallback"`
		Table  string    `json:"table"`
		Row    audit.Row `json:"row"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &got); err != nil {
		t.Fatal(err)
	}
	if got.Marker != 1 || got.Table != e.table || got.Row.CallID != "call-lost" || got.Row.SpanID != final.SpanID ||
		!strings.Contains(got.Row.ArgsPreview, `"password":"[redacted]"`) || strings.Contains(lines[0], "hunter2") {
		t.Errorf("fallback line: %s", lines[0])
	}
	if st := down.Stats(); st.Fallbacks != 2 || st.Attempts < 2 || st.Written != 0 {
		t.Errorf("stats = %+v", st)
	}

	// What CloudWatch Logs keeps: prefixed lines, other output around them,
	// and the same line again wrapped by Lambda's JSON log format.
	wrapped, _ := json.Marshal(map[string]string{"time": "2026-11-29T12:00:01Z", "type": "function", "message": lines[0]})
	logText := strings.Join([]string{
		"START RequestId: 7c1d Version: $LATEST",
		"2026-11-29T12:00:00.123Z\t7c1d\tINFO\t" + lines[0],
		"2026-11-29T12:00:00.124Z\t7c1d\tINFO\tsomething else {\"not\":\"a row\"}",
		string(wrapped),
		lines[1],
		"END RequestId: 7c1d",
	}, "\n")
	up := e.auditor(t, audit.Config{})
	st, err := audit.Replay(context.Background(), strings.NewReader(logText), up, "broadcast_delete")
	if err != nil {
		t.Fatal(err)
	}
	if st.Found != 3 || st.Written != 2 || st.Present != 1 || st.Failed != 0 {
		t.Errorf("first replay: %+v", st)
	}
	st, err = audit.Replay(context.Background(), strings.NewReader(logText), up, "broadcast_delete")
	if err != nil {
		t.Fatal(err)
	}
	if st.Found != 3 || st.Written != 0 || st.Present != 3 {
		t.Errorf("second replay: %+v", st)
	}
	items := e.items(t)
	if len(items) != 2 {
		t.Fatalf("%d rows, want 2", len(items))
	}
	it := e.item(t, "call-lost")
	if str(it, "spanId") != final.SpanID || str(it, "status") != audit.StatusDone || str(it, "entityKey") != "entityId#b-1" ||
		str(it, "startedAt") != "2026-11-29T12:00:00.000000000Z" {
		t.Errorf("replayed row: %v", it)
	}
	if got := str(e.item(t, "call-lost-pending"), "status"); got != audit.StatusPending {
		t.Errorf("replayed pending row: status %q", got)
	}
}

// throttlingProxy stands in front of DynamoDB Local and answers the first n
// PutItem requests the way DynamoDB does when a table is throttled.
func throttlingProxy(t *testing.T, target string, n int64) (endpoint string, puts *atomic.Int64) {
	puts = new(atomic.Int64)
	return dynamoProxy(t, target, func(w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("X-Amz-Target") != "DynamoDB_20120810.PutItem" || puts.Add(1) > n {
			return false
		}
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"The level of configured provisioned throughput for the table was exceeded."}`)
		return true
	}), puts
}

func TestThrottledPutIsRetriedAndWrittenOnce(t *testing.T) {
	e := newEnv(t)
	proxy, puts := throttlingProxy(t, e.server.Endpoint(), 3)
	var fb bytes.Buffer
	a := e.auditor(t, audit.Config{Client: clientFor(proxy), Fallback: &fb})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	a.Record(ctx, baseRow("call-throttled"))

	if fb.Len() != 0 {
		t.Fatalf("fell back: %s", fb.String())
	}
	if len(e.items(t)) != 1 {
		t.Fatalf("want one row")
	}
	if got := puts.Load(); got != 4 {
		t.Errorf("%d PutItem requests reached the proxy, want 4 (3 throttled + 1)", got)
	}
	if st := a.Stats(); st.Attempts != 4 || st.Retries != 3 || st.Written != 1 {
		t.Errorf("stats = %+v", st)
	}
}

func TestThrottledBeyondMaxAttemptsFallsBack(t *testing.T) {
	e := newEnv(t)
	proxy, puts := throttlingProxy(t, e.server.Endpoint(), 1000)
	var fb bytes.Buffer
	a := e.auditor(t, audit.Config{Client: clientFor(proxy), Fallback: &fb, MaxAttempts: 3})
	a.Record(context.Background(), baseRow("call-always-throttled"))
	if got := puts.Load(); got != 3 {
		t.Errorf("%d attempts, want MaxAttempts=3", got)
	}
	if !strings.Contains(fb.String(), `"mcpfnAuditFallback":1`) || !strings.Contains(fb.String(), "ProvisionedThroughputExceeded") {
		t.Errorf("fallback: %s", fb.String())
	}
}

// throttleEveryPut answers every PutItem as a throttled DynamoDB does, in
// process: no socket, so a synctest bubble can run the SDK and the retry
// loop around it on its fake clock. DynamoDB Local never throttles.
type throttleEveryPut struct{ puts atomic.Int64 }

func (tp *throttleEveryPut) RoundTrip(r *http.Request) (*http.Response, error) {
	if err := drainPut(r); err != nil {
		return nil, err
	}
	tp.puts.Add(1)
	return dynamoAnswer(r, http.StatusBadRequest, `{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"The level of configured provisioned throughput for the table was exceeded."}`), nil
}

// TestDeadlineBoundsRetries: against a table that throttles every write,
// the retries stop in time to keep the reserve (100 ms): the fallback line
// is out before ctx's deadline less the reserve. Time is synctest's, so the
// bound is exact.
func TestDeadlineBoundsRetries(t *testing.T) {
	e := newEnv(t)
	tp := &throttleEveryPut{}
	var fb bytes.Buffer
	a := e.auditor(t, audit.Config{Fallback: &fb, MaxAttempts: 1000, Client: inProcessClient(tp)})
	synctest.Test(t, func(t *testing.T) {
		const deadline, reserve = 400 * time.Millisecond, 100 * time.Millisecond
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		start := time.Now()
		a.Record(ctx, baseRow("call-deadline"))
		if took := time.Since(start); took > deadline-reserve {
			t.Errorf("Record took %v with a %v deadline, past the %v reserve", took, deadline, reserve)
		}
	})
	if st := a.Stats(); st.Fallbacks != 1 || st.Attempts < 2 || st.Attempts != tp.puts.Load() {
		t.Errorf("stats = %+v after %d puts", st, tp.puts.Load())
	}
	if !strings.Contains(fb.String(), `"callId":"call-deadline"`) {
		t.Errorf("fallback: %s", fb.String())
	}
}

func TestClientErrorIsNotRetried(t *testing.T) {
	e := newEnv(t)
	var fb bytes.Buffer
	a := e.auditor(t, audit.Config{Table: e.table + "-missing", Fallback: &fb})
	a.Record(context.Background(), baseRow("call-no-table"))
	if st := a.Stats(); st.Attempts != 1 || st.Fallbacks != 1 {
		t.Errorf("stats %+v: a missing table is not worth retrying", st)
	}
	if !strings.Contains(fb.String(), "ResourceNotFoundException") {
		t.Errorf("fallback: %s", fb.String())
	}
}

// TestLateOutcomeFallsBackThenReplays: a late outcome that cannot be written
// is printed as a fallback line ("late"), and Replay adds it to the row of
// its own attempt, as Late would have.
func TestLateOutcomeFallsBackThenReplays(t *testing.T) {
	e := newEnv(t)
	up := e.auditor(t, audit.Config{})
	ctx := context.Background()
	row := baseRow("call-late-lost")
	if _, err := up.Pending(ctx, row); err != nil {
		t.Fatal(err)
	}
	final := baseRow("call-late-lost")
	final.AttemptID, final.Outcome, final.ErrorCode = row.AttemptID, audit.OutcomeUnknown, "TIMEOUT"
	up.Record(ctx, final)

	var fb bytes.Buffer
	down := e.auditor(t, audit.Config{Client: clientFor("http://" + closedPort(t)), Fallback: &fb})
	dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	down.Late(dctx, &audit.Row{CallID: "call-late-lost", Tool: row.Tool, AttemptID: row.AttemptID, LateOutcome: "error", LateErrorCode: "NOT_FOUND"})
	if !strings.Contains(fb.String(), `"status":"late"`) {
		t.Fatalf("fallback: %s", fb.String())
	}
	for range 2 {
		if _, err := audit.Replay(ctx, strings.NewReader(fb.String()), up, "broadcast_delete"); err != nil {
			t.Fatal(err)
		}
	}
	it := e.item(t, "call-late-lost")
	if str(it, "lateOutcome") != "error" || str(it, "lateErrorCode") != "NOT_FOUND" || str(it, "finishedAt") == "" ||
		str(it, "status") != audit.StatusDone || str(it, "outcome") != audit.OutcomeUnknown {
		t.Errorf("row: %v", it)
	}
}
