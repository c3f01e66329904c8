package localtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/localtest"
	"github.com/mcpfn/mcpfn/localtest/internal/afterresponse"
)

// afterResponseFunction serves the afterresponse fixture with the default
// audit mode (after the response) on one execution environment, its
// DynamoDB endpoint being finalTable, which can slow, throttle or drop the
// writes of final rows.
const afterResponseFunction = "AfterResponseFunction"

// finalTable stands between the function and DynamoDB Local and acts on
// PutItem requests of final rows (status done) only: pending rows, which
// the after-response mode still writes before the handler, pass through.
var finalTable struct {
	url      string
	hold     atomic.Int64 // nanoseconds each final put is held
	throttle atomic.Int64 // final puts still to answer as throttled
	drop     atomic.Bool  // close the connection of every final put
	seen     atomic.Int64 // final puts received
}

// afterResponseFunctions starts finalTable and returns the fixture's spec.
// The stack is not started yet; the proxy finds DynamoDB Local at request
// time.
func afterResponseFunctions() []localtest.FunctionSpec {
	srv := httptest.NewServer(http.HandlerFunc(serveFinalTable))
	finalTable.url = srv.URL // lives as long as the test process
	return []localtest.FunctionSpec{{
		Name: afterResponseFunction, Package: "./localtest/internal/afterresponse/function", RoleTool: afterresponse.Tool(),
		Timeout: 5, MaxConcurrency: 1,
		Env: map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": srv.URL},
	}}
}

func serveFinalTable(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if r.Header.Get("X-Amz-Target") == "DynamoDB_20120810.PutItem" && bytes.Contains(body, []byte(`"status":{"S":"done"}`)) {
		finalTable.seen.Add(1)
		switch {
		case finalTable.drop.Load():
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				_ = conn.Close() // unreachable: no answer at all
			}
			return
		case finalTable.throttle.Add(-1) >= 0:
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"The level of configured provisioned throughput for the table was exceeded."}`)
			return
		}
		select {
		case <-time.After(time.Duration(finalTable.hold.Load())):
		case <-r.Context().Done():
			return
		}
	}
	u, _ := url.Parse(stack.DynamoDBEndpoint())
	httputil.NewSingleHostReverseProxy(u).ServeHTTP(w, r)
}

// resetFinalTable puts finalTable back to forwarding everything at once.
func resetFinalTable(t *testing.T) {
	t.Cleanup(func() {
		finalTable.hold.Store(0)
		finalTable.throttle.Store(0)
		finalTable.drop.Store(false)
	})
}

// afterResponseCall is the fixture's JSON-RPC tools/call payload.
func afterResponseCall(mode, id string) []byte {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": afterresponse.Name, "arguments": map[string]any{"mode": mode, "id": id}}})
	return b
}

// invokeAfterResponse calls the fixture on the Invoke API. The answer comes
// at the runtime's response, as on Lambda, while the environment stays
// busy until the runtime has written the row and asked for its next
// invocation; it waits for the stack to settle first. (argsRow settles
// too: the final row lands after the answer.)
func invokeAfterResponse(t *testing.T, mode, id string) *lambda.InvokeOutput {
	t.Helper()
	if err := stack.Settle(t.Context()); err != nil {
		t.Fatal(err)
	}
	out, err := lambdaClient().Invoke(t.Context(), &lambda.InvokeInput{FunctionName: aws.String(afterResponseFunction), Payload: afterResponseCall(mode, id)})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// argsRow returns the one audit row of the call whose arguments name id
// (a pending row has no entity yet: the handler sets it).
func argsRow(t *testing.T, id string) audit.Row {
	t.Helper()
	rows, _, err := auditor().RecentRows(t.Context(), audit.QueryOptions{Since: time.Now().Add(-time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	var mine []audit.Row
	for _, r := range rows {
		if strings.Contains(r.ArgsPreview, id) {
			mine = append(mine, r)
		}
	}
	if len(mine) != 1 {
		t.Fatalf("%d rows of the call with id %s, want 1: %+v", len(mine), id, mine)
	}
	return mine[0]
}

// functionLog is the fixture's log from mark (logMark) on: what this test
// made it write. The log lives as long as the stack, through every test
// and every run of them (go test -count=N): a line an earlier test wrote
// on purpose (a fallback line, a teardown) must neither fail nor pass
// this one.
func functionLog(t *testing.T, mark int) string {
	t.Helper()
	b, err := os.ReadFile(stack.LogPath(afterResponseFunction))
	if err != nil {
		t.Fatal(err)
	}
	return string(b[min(mark, len(b)):])
}

// logMark is where the fixture's log ends now.
func logMark(t *testing.T) int {
	t.Helper()
	fi, err := os.Stat(stack.LogPath(afterResponseFunction))
	if errors.Is(err, fs.ErrNotExist) {
		return 0 // nothing written yet
	}
	if err != nil {
		t.Fatal(err)
	}
	return int(fi.Size())
}

// TestAfterResponseRowIsWrittenBeforeTheEnvironmentIsReleased: with the
// table slow (each final row held 800 ms), the caller has its answer while
// the final row is not yet written (the row still says pending), and the
// environment is released — free for the next invoke, or to be frozen —
// only once the runtime, done writing the row, has asked for its next
// invocation (docs/decisions/0039-audit-row-from-snapshot.md). The local
// stack answers at the runtime's response as Lambda does (docs/local.md);
// the emulator itself would hold the answer until the runtime's next.
func TestAfterResponseRowIsWrittenBeforeTheEnvironmentIsReleased(t *testing.T) {
	resetFinalTable(t)
	mark := logMark(t)
	finalTable.hold.Store(int64(800 * time.Millisecond))
	e, err := stack.Hold(t.Context(), afterResponseFunction)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for i := range 2 { // the second on the same, warm environment
		id := unique(fmt.Sprintf("after-%d", i))
		inv, err := e.Call(t.Context(), afterResponseCall(afterresponse.ModeOK, id))
		if err != nil {
			t.Fatal(err)
		}
		if inv.Status != http.StatusOK || !inv.Early || !strings.Contains(string(inv.Payload), id) {
			t.Fatalf("answer %d early=%v %s", inv.Status, inv.Early, inv.Payload)
		}
		if r := argsRow(t, id); r.Status != audit.StatusPending {
			t.Errorf("row when the caller had its answer: status %q, want pending (the final row is written after the answer)", r.Status)
		}
		if err := inv.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
		if r := argsRow(t, id); r.Status != audit.StatusDone || !r.OK {
			t.Errorf("row when the environment was released: status %q ok=%v, want the final row", r.Status, r.OK)
		}
		if tl := inv.Timeline(); tl.RuntimeDone.IsZero() || tl.RuntimeDone.Before(tl.Posted) || tl.Released.Before(tl.RuntimeDone) || tl.Posted.After(inv.Answered) || len(tl.ExtensionNext) != 0 {
			t.Errorf("timeline %+v: want the answer at the response, then the runtime's next (the row written: it says done), the release after it, no extension", tl)
		}
	}
	if log := functionLog(t, mark); strings.Contains(log, "written before the response") || strings.Contains(log, audit.FallbackMarker) {
		t.Errorf("the function did not run in after-response mode cleanly:\n%s", log)
	}
	// Lambda sends SIGTERM, on which the rows still queued are written
	// (TestAfterResponseSIGTERMRunsEnvironmentTeardowns), only to a process
	// that registered an extension in its init: aws-lambda-go's, which
	// adapter.Start registers while the call keys are fetched.
	if ext := e.Extensions(); !slices.Equal(ext, []string{"GoLangEnableSIGTERM"}) {
		t.Errorf("extensions registered in the init: %q, want aws-lambda-go's SIGTERM extension", ext)
	}
}

// TestAfterResponseFaults are the audit's fault tests under the emulator in
// after-response mode: a throttled table still gets the row exactly once,
// and an unreachable one gets a fallback line in the function's log, which
// Replay turns into the row. (Process death: TestFunctionFailures' crash
// runs the faulty tool, also in after-response mode, and
// TestAfterResponseProcessDiesAfterAnswering below.)
func TestAfterResponseFaults(t *testing.T) {
	t.Run("throttled", func(t *testing.T) {
		resetFinalTable(t)
		before := finalTable.seen.Load()
		finalTable.throttle.Store(3)
		id := unique("throttled")
		if out := invokeAfterResponse(t, afterresponse.ModeOK, id); out.FunctionError != nil {
			t.Fatalf("answer %s", out.Payload)
		}
		if r := argsRow(t, id); r.Status != audit.StatusDone {
			t.Errorf("row status %q, want done", r.Status)
		}
		if n := finalTable.seen.Load() - before; n != 4 {
			t.Errorf("%d final puts, want 3 throttled and 1 written", n)
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		resetFinalTable(t)
		finalTable.drop.Store(true)
		mark := logMark(t)
		id := unique("unreachable")
		if out := invokeAfterResponse(t, afterresponse.ModeOK, id); out.FunctionError != nil || !strings.Contains(string(out.Payload), id) {
			t.Fatalf("answer %s", out.Payload)
		}
		if r := argsRow(t, id); r.Status != audit.StatusPending {
			t.Errorf("row status %q, want the pending row only", r.Status)
		}
		log := functionLog(t, mark) // the environment was released (argsRow settled it): its fallback line is out
		if !strings.Contains(log, audit.FallbackMarker) || !strings.Contains(log, id) {
			t.Fatalf("no fallback line for %s in the function's log:\n%s", id, log)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		if _, err := audit.Replay(ctx, strings.NewReader(log), auditor(), afterresponse.Name); err != nil {
			t.Fatal(err)
		}
		if r := argsRow(t, id); r.Status != audit.StatusDone || !r.OK {
			t.Errorf("replayed row: status %q ok=%v", r.Status, r.OK)
		}
	})
}

// TestAfterResponseProcessDiesAfterAnswering: the process posts its answer
// and dies 300 ms later, while the final row is held by a slow table. The
// answer was out (the RIE passes on the posted body with its 502; Lambda
// would have answered the caller already), and the destructive call's
// pending row, written before its handler, is in the table: nothing of a
// destructive call is lost. A read-only call has no pending row; its row
// is what such a death loses (docs/audit.md).
func TestAfterResponseProcessDiesAfterAnswering(t *testing.T) {
	resetFinalTable(t)
	finalTable.hold.Store(int64(3 * time.Second))
	id := unique("dies")
	out := invokeAfterResponse(t, afterresponse.ModeExitAfter, id)
	if !strings.Contains(string(out.Payload), `answered`) || !strings.Contains(string(out.Payload), id) {
		t.Errorf("the answer posted before the death is not in what the caller got: %v %s", aws.ToString(out.FunctionError), out.Payload)
	}
	r := argsRow(t, id)
	if r.Status != audit.StatusPending || r.Tool != afterresponse.Name || !strings.Contains(r.ArgsPreview, id) {
		t.Errorf("row left by the dead process: %+v", r)
	}
	// The environment is replaced; the next call is served and audited.
	finalTable.hold.Store(0)
	next := unique("after-death")
	if out := invokeAfterResponse(t, afterresponse.ModeOK, next); out.FunctionError != nil {
		t.Fatalf("after the death: %s", out.Payload)
	}
	if r := argsRow(t, next); r.Status != audit.StatusDone {
		t.Errorf("row after the death: %q", r.Status)
	}
}

// TestAfterResponseSIGTERMRunsEnvironmentTeardowns: in the after-response
// mode the process handles the SIGTERM Lambda sends before shutting an
// environment down (aws-lambda-go's WithEnableSIGTERM): it drains the audit
// queue and runs the environment teardowns.
func TestAfterResponseSIGTERMRunsEnvironmentTeardowns(t *testing.T) {
	resetFinalTable(t)
	mark := logMark(t)
	if out := invokeAfterResponse(t, afterresponse.ModeTeardown, unique("teardown")); out.FunctionError != nil {
		t.Fatalf("answer %s", out.Payload)
	}
	var bootstraps []int
	for _, pid := range stack.Processes() {
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && strings.HasSuffix(exe, "/"+afterResponseFunction+"/bootstrap") {
			bootstraps = append(bootstraps, pid)
		}
	}
	if len(bootstraps) != 1 {
		t.Fatalf("bootstraps of %s: %v, want 1", afterResponseFunction, bootstraps)
	}
	if err := syscall.Kill(bootstraps[0], syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(functionLog(t, mark), afterresponse.TeardownLine); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no environment teardown after SIGTERM:\n%s", functionLog(t, mark))
		}
	}
}
