package audit_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
)

// heldPuts answers PutItem in process, as DynamoDB does, only once release
// is closed (or never, if it stays open: the request then ends with its
// context). No socket, so a synctest bubble runs the queue on its clock.
type heldPuts struct {
	release chan struct{}
	puts    atomic.Int64
}

func (h *heldPuts) RoundTrip(r *http.Request) (*http.Response, error) {
	if err := drainPut(r); err != nil {
		return nil, err
	}
	h.puts.Add(1)
	select {
	case <-h.release:
	case <-r.Context().Done():
		return nil, r.Context().Err()
	}
	return dynamoAnswer(r, http.StatusOK, "{}"), nil
}

// drainPut consumes a request an in-process DynamoDB serves, which must be
// a PutItem.
func drainPut(r *http.Request) error {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	if r.Header.Get("X-Amz-Target") != "DynamoDB_20120810.PutItem" {
		return fmt.Errorf("unexpected %s", r.Header.Get("X-Amz-Target"))
	}
	return nil
}

// dynamoAnswer is an in-process DynamoDB's answer to r.
func dynamoAnswer(r *http.Request, status int, body string) *http.Response {
	return &http.Response{StatusCode: status, Status: fmt.Sprintf("%d %s", status, http.StatusText(status)), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}}, Body: io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)), Request: r}
}

// inProcessClient is a DynamoDB client whose requests rt serves, with no
// socket: a synctest bubble can run it on its fake clock.
func inProcessClient(rt http.RoundTripper) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region: "us-east-1", BaseEndpoint: aws.String("http://dynamodb.invalid"), HTTPClient: &http.Client{Transport: rt},
		Credentials: credentials.NewStaticCredentialsProvider("mcpfnlocal", "mcpfnlocal", "")})
}

// TestQueueWaitHoldsTheInvocationUntilItsRowsAreWritten: the extension's
// Wait returns neither before the invocation has ended (its handler may
// not even have started) nor before its rows are written; a row's write
// begins only once its invocation is answered.
func TestQueueWaitHoldsTheInvocationUntilItsRowsAreWritten(t *testing.T) {
	e := newEnv(t)
	h := &heldPuts{}
	var fb bytes.Buffer
	q := audit.NewQueue(e.auditor(t, audit.Config{Client: inProcessClient(h), Fallback: &fb}))
	synctest.Test(t, func(t *testing.T) {
		h.release = make(chan struct{}) // a channel of the bubble
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		var returned atomic.Bool
		go func() {
			if !q.Wait("req-1", time.Now().Add(3*time.Second)) {
				t.Error("Wait gave up")
			}
			returned.Store(true)
		}()
		synctest.Wait()
		if returned.Load() {
			t.Fatal("Wait returned before the invocation queued anything")
		}
		q.Enqueue(ctx, "req-1", baseRow("call-q1"))
		q.Enqueue(ctx, "req-2", baseRow("call-q2")) // another invocation's row
		synctest.Wait()
		if returned.Load() {
			t.Fatal("Wait returned before the invocation ended")
		}
		if h.puts.Load() != 0 {
			t.Errorf("%d puts began before the invocation was answered, want none", h.puts.Load())
		}
		q.End("req-1")
		synctest.Wait()
		if returned.Load() {
			t.Fatal("Wait returned while the row was still being written")
		}
		if h.puts.Load() != 1 {
			t.Errorf("%d puts in flight, want 1 (req-2 is not answered yet)", h.puts.Load())
		}
		close(h.release)
		synctest.Wait()
		if !returned.Load() {
			t.Fatal("Wait still waiting after the row was written")
		}
		// An invocation that ended before the extension heard of it.
		q.End("req-2")
		if !q.Wait("req-2", time.Time{}) {
			t.Error("req-2 not settled")
		}
	})
	if fb.Len() != 0 {
		t.Errorf("fallback: %s", fb.String())
	}
}

// TestQueueWaitLimitPrintsTheFallbackLine: when the invocation's deadline
// (less the margin) comes first, the row still in flight is printed as a
// fallback line at once — before the environment can be frozen — under the
// same span id the write uses.
func TestQueueWaitLimitPrintsTheFallbackLine(t *testing.T) {
	e := newEnv(t)
	h := &heldPuts{}
	var fb syncBuffer
	q := audit.NewQueue(e.auditor(t, audit.Config{Client: inProcessClient(h), Fallback: &fb}))
	synctest.Test(t, func(t *testing.T) {
		h.release = make(chan struct{}) // never closed: DynamoDB never answers
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		row := baseRow("call-slow")
		span := row.SpanID // the row is the queue's once enqueued
		q.Enqueue(ctx, "req-slow", row)
		q.End("req-slow")
		if q.Wait("req-slow", start.Add(700*time.Millisecond)) {
			t.Error("Wait reported the row written")
		}
		if took := time.Since(start); took != 700*time.Millisecond {
			t.Errorf("Wait returned after %v, want exactly the 700ms limit", took)
		}
		out := fb.String()
		if strings.Count(out, `"mcpfnAuditFallback":1`) != 1 || !strings.Contains(out, `"spanId":"`+span+`"`) ||
			!strings.Contains(out, "deadline came before the row was written") || strings.Contains(out, "hunter2") {
			t.Errorf("fallback at the limit: %s", out)
		}
		if err := q.Drain(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// TestQueueBuildsTheRowOnlyOnceAnswered: a row queued as a snapshot
// (EnqueueFunc) costs its call nothing more: it is built only once its
// invocation is answered, by the writer, and then written.
func TestQueueBuildsTheRowOnlyOnceAnswered(t *testing.T) {
	e := newEnv(t)
	h := &heldPuts{}
	var fb syncBuffer
	q := audit.NewQueue(e.auditor(t, audit.Config{Client: inProcessClient(h), Fallback: &fb}))
	synctest.Test(t, func(t *testing.T) {
		h.release = make(chan struct{})
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		var builds atomic.Int64
		q.EnqueueFunc(ctx, "req-b", "call-b", "", func() *audit.Row {
			builds.Add(1)
			return baseRow("call-b")
		})
		synctest.Wait()
		if n := builds.Load(); n != 0 || h.puts.Load() != 0 {
			t.Fatalf("%d builds, %d puts before the invocation was answered, want none", n, h.puts.Load())
		}
		q.End("req-b")
		synctest.Wait()
		if n := builds.Load(); n != 1 || h.puts.Load() != 1 {
			t.Fatalf("%d builds, %d puts once answered, want 1 and 1", n, h.puts.Load())
		}
		close(h.release)
		if !q.Wait("req-b", time.Time{}) {
			t.Error("not settled")
		}
	})
	if out := fb.String(); out != "" {
		t.Errorf("fallback: %s", out)
	}
}

// TestQueueRowOfAnInvocationThatNeverEnded: an invocation whose answer
// never came out (the adapter failed before handing it over) keeps its row
// queued, unbuilt; at the limit the row is printed as a fallback line — so
// it is not lost — and dropped: an End after that writes nothing.
func TestQueueRowOfAnInvocationThatNeverEnded(t *testing.T) {
	e := newEnv(t)
	h := &heldPuts{}
	var fb syncBuffer
	q := audit.NewQueue(e.auditor(t, audit.Config{Client: inProcessClient(h), Fallback: &fb}))
	synctest.Test(t, func(t *testing.T) {
		h.release = make(chan struct{})
		close(h.release)
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		row := baseRow("call-never")
		q.EnqueueFunc(ctx, "req-never", row.CallID, "", func() *audit.Row { r := *row; return &r })
		if q.Wait("req-never", start.Add(time.Second)) {
			t.Error("Wait reported the row written")
		}
		out := fb.String()
		if strings.Count(out, `"mcpfnAuditFallback":1`) != 1 || !strings.Contains(out, `"spanId":"`+row.SpanID+`"`) || strings.Contains(out, "hunter2") {
			t.Errorf("fallback at the limit: %s", out)
		}
		q.End("req-never")
		if err := q.Drain(context.Background()); err != nil {
			t.Fatal(err)
		}
		if h.puts.Load() != 0 {
			t.Errorf("%d puts of a row already printed, never started: want none", h.puts.Load())
		}
	})
}

// TestQueueDrainWritesRowsOfInvocationsNotEnded: on SIGTERM the queue
// writes every row it holds, its invocation answered or not; a row still
// unwritten when the drain's time is up is printed as a fallback line.
func TestQueueDrainWritesRowsOfInvocationsNotEnded(t *testing.T) {
	e := newEnv(t)
	h := &heldPuts{}
	var fb syncBuffer
	q := audit.NewQueue(e.auditor(t, audit.Config{Client: inProcessClient(h), Fallback: &fb}))
	synctest.Test(t, func(t *testing.T) {
		h.release = make(chan struct{}) // DynamoDB holds every put
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		q.Enqueue(ctx, "req-d1", baseRow("call-d1"))
		q.Enqueue(ctx, "req-d2", baseRow("call-d2"))
		q.End("req-d2")
		dctx, dcancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer dcancel()
		if err := q.Drain(dctx); err == nil {
			t.Error("Drain reported every row written")
		}
		if h.puts.Load() != 2 {
			t.Errorf("%d puts sent by the drain, want 2 (the ended invocation's and the other's)", h.puts.Load())
		}
		out := fb.String()
		if strings.Count(out, `"mcpfnAuditFallback":1`) != 2 || !strings.Contains(out, "shut down before the row was written") {
			t.Errorf("fallback lines after the drain: %s", out)
		}
		close(h.release)
		if err := q.Drain(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// TestQueueWritesRowsAndLateOutcomes: against DynamoDB Local, a queued
// final row completes its pending row, and a late outcome sent while the
// final row is still queued is applied to it, not overwritten by it.
func TestQueueWritesRowsAndLateOutcomes(t *testing.T) {
	e := newEnv(t)
	gate, open := holdingProxy(t, e.server.Endpoint())
	a := e.auditor(t, audit.Config{Client: clientFor(gate)})
	q := audit.NewQueue(a)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pending := baseRow("call-qlate")
	if _, err := a.Pending(ctx, pending); err != nil {
		t.Fatal(err)
	}
	open.Store(false)
	final := baseRow("call-qlate")
	final.AttemptID = pending.AttemptID
	late := &audit.Row{CallID: final.CallID, AttemptID: final.AttemptID, Tool: final.Tool, LateOutcome: "ok"}
	q.Enqueue(ctx, "req-late", final)
	q.End("req-late")
	finished := time.Now().UTC()
	late.FinishedAt = &finished
	lateDone := make(chan struct{})
	go func() {
		defer close(lateDone)
		q.Late(ctx, late)
	}()
	// Give a Late that does not wait for its row the time to send its
	// update first (it would then be overwritten); a correct one is still
	// waiting when the table opens.
	select {
	case <-lateDone:
	case <-time.After(300 * time.Millisecond):
	}
	open.Store(true)
	if !q.Wait("req-late", time.Now().Add(5*time.Second)) {
		t.Fatal("row not written in time")
	}
	<-lateDone
	it := e.item(t, "call-qlate")
	if str(it, "status") != audit.StatusDone || str(it, "lateOutcome") != "ok" || str(it, "attemptId") != pending.AttemptID {
		t.Errorf("row: %v", it)
	}
}

// holdingProxy stands in front of DynamoDB Local and holds every PutItem
// while open is false (a slow table); it starts open.
func holdingProxy(t *testing.T, target string) (endpoint string, open *atomic.Bool) {
	open = new(atomic.Bool)
	open.Store(true)
	return dynamoProxy(t, target, func(w http.ResponseWriter, r *http.Request) bool {
		for r.Header.Get("X-Amz-Target") == "DynamoDB_20120810.PutItem" && !open.Load() {
			select {
			case <-r.Context().Done():
				return true
			case <-time.After(5 * time.Millisecond):
			}
		}
		return false
	}), open
}

// dynamoProxy stands in front of DynamoDB Local; intercept sees each
// request first and reports whether it answered it.
func dynamoProxy(t *testing.T, target string, intercept func(http.ResponseWriter, *http.Request) bool) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !intercept(w, r) {
			rp.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestAdapterAfterResponseAnswersBeforeTheFinalRow drives a destructive
// tool through the Lambda entry point with the final row queued: the
// pending row is in the table before the handler runs, the answer comes
// while the final row's write is still held, and the row lands after.
func TestAdapterAfterResponseAnswersBeforeTheFinalRow(t *testing.T) {
	e := newEnv(t)
	gate, open := holdingProxy(t, e.server.Endpoint())
	q := audit.NewQueue(e.auditor(t, audit.Config{Client: clientFor(gate)}))
	var pendingSeen atomic.Bool
	check := adapter.Hooks{AfterHandle: func(ctx context.Context, call *adapter.Call, out any) (any, error) {
		pendingSeen.Store(str(e.item(t, call.ID), "status") == audit.StatusPending)
		open.Store(false) // from here on, DynamoDB is slow
		return nil, nil
	}}
	fn := newFunction(deleteTool(t, true), adapter.WithAuditQueue(q), adapter.WithHooks(check))
	out := invokeLambda(t, fn, envelope(t, "call-after", deleteIn{ID: "b-after"}), "")
	if !strings.Contains(string(out), "b-after") {
		t.Fatalf("answer: %s", out)
	}
	if !pendingSeen.Load() {
		t.Error("the pending row was not in the table before the handler's result")
	}
	if got := str(e.item(t, "call-after"), "status"); got != audit.StatusPending {
		t.Errorf("status %q when the call was answered, want pending (the final row is still queued)", got)
	}
	open.Store(true)
	if err := q.Drain(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	if it := e.item(t, "call-after"); str(it, "status") != audit.StatusDone || str(it, "entityKey") != "entityId#b-after" {
		t.Errorf("final row: %v", it)
	}
}

// TestAdapterAfterResponseProcessDeath: the process answers a destructive
// call and dies before its queued final row is written (DynamoDB slow).
// The pending row, written before the handler ran, is what is left:
// nothing of a destructive call is lost; its row reads "pending", as for a
// process that died mid-handler.
func TestAdapterAfterResponseProcessDeath(t *testing.T) {
	if os.Getenv("MCPFN_TEST_AFTER_TABLE") != "" {
		return // the child; TestAdapterAfterResponseDyingChild does the work
	}
	e := newEnv(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestAdapterAfterResponseDyingChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "MCPFN_TEST_AFTER_TABLE="+e.table, "MCPFN_DYNAMODB_ENDPOINT="+e.server.Endpoint())
	out, err := cmd.CombinedOutput()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 3 {
		t.Fatalf("the child should answer, then die with status 3: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "ANSWERED") || !strings.Contains(string(out), "b-answered") {
		t.Fatalf("the child did not answer before dying:\n%s", out)
	}
	it := e.item(t, "call-answered")
	if str(it, "status") != audit.StatusPending || !strings.Contains(str(it, "argsPreview"), "b-answered") || str(it, "callerSubject") != "user-7" {
		t.Errorf("row left by the dead process: %v", it)
	}
}

// TestAdapterAfterResponseDyingChild runs only as the child of the test
// above: from the handler's end on, DynamoDB holds every write, so the
// final row is still queued when the process exits.
func TestAdapterAfterResponseDyingChild(t *testing.T) {
	table := os.Getenv("MCPFN_TEST_AFTER_TABLE")
	if table == "" {
		t.Skip("runs only as a child process of TestAdapterAfterResponseProcessDeath")
	}
	gate, open := holdingProxy(t, os.Getenv("MCPFN_DYNAMODB_ENDPOINT"))
	q := audit.NewQueue(audit.New(audit.Config{Table: table, Client: clientFor(gate)}))
	slow := adapter.Hooks{AfterHandle: func(context.Context, *adapter.Call, any) (any, error) {
		open.Store(false)
		return nil, nil
	}}
	fn := newFunction(deleteTool(t, true), adapter.WithAuditQueue(q), adapter.WithHooks(slow))
	out := invokeLambda(t, fn, envelope(t, "call-answered", deleteIn{ID: "b-answered"}), "")
	fmt.Printf("ANSWERED %s\n", out)
	os.Exit(3)
}
