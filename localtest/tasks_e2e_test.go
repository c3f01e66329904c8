package localtest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/localtest"
	"github.com/mcpfn/mcpfn/localtest/conformance"
)

// The tasks end-to-end tests: the MCP Tasks extension (v2, SEP-2663) and
// cancellation through the stack's JWT gateway, the local Invoke API's
// asynchronous (Event) invocations, the emulator and the adapter, with the
// task records and audit rows in DynamoDB Local.
//
// Their tool is the conformance fixture slow_compute (seconds, label;
// progress once a second, which a task shows as its statusMessage; it
// honours cancellation and logs when it stops), run as its own function
// with a short cancel watch; local_crash_job is a destructive task whose
// process exits mid-handler.
const (
	taskSlowFunction  = "TaskSlowComputeFunction"
	taskCrashFunction = "TaskCrashJobFunction"
	// taskInputFunction runs multi_input, a task that asks for input (the
	// resume of issue 20's H1 scenario).
	taskInputFunction = "TaskMultiInputFunction"
	// taskWatch is how often a running task reads its record for a cancel
	// (MCPFN_TASK_WATCH_INTERVAL; 2 s by default on AWS).
	taskWatch = 250 * time.Millisecond

	tasksExtension = "io.modelcontextprotocol/tasks"
)

// taskRetryDelays are the stack's waits before retrying a failed
// asynchronous invocation: Lambda waits 1 and 2 minutes.
var taskRetryDelays = []time.Duration{500 * time.Millisecond, time.Second}

// EnvLongTests runs the long versions of the tests (the 60-second
// task); CI=true does too. Otherwise the task runs five seconds: the same
// path, a shorter wait.
const EnvLongTests = "MCPFN_LONG_TESTS"

// longTaskSeconds is how long the polled task runs.
func longTaskSeconds() int {
	if os.Getenv(EnvLongTests) == "1" || os.Getenv("CI") == "true" {
		return 60
	}
	return 5
}

// taskFunctions are the fixtures these tests run (testConfig adds them).
func taskFunctions() []localtest.FunctionSpec {
	env := func(tool string) map[string]string {
		return map[string]string{conformance.EnvTool: tool, adapter.EnvTaskWatchInterval: taskWatch.String()}
	}
	return []localtest.FunctionSpec{
		// Long enough for the 60-second task and a cancelled 10-minute one.
		{Name: taskSlowFunction, Package: "./localtest/conformance/function", Tool: conformance.ToolSlowCompute, Env: env(conformance.ToolSlowCompute), Timeout: 120},
		{Name: taskCrashFunction, Package: "./localtest/conformance/function", Tool: conformance.ToolCrashJob, Env: env(conformance.ToolCrashJob), Timeout: 10},
		{Name: taskInputFunction, Package: "./localtest/conformance/function", Tool: conformance.ToolMultiInput, Env: env(conformance.ToolMultiInput), Timeout: 10},
	}
}

// taskTools are their definitions, for the gateway's catalog.
func taskTools() []*adapter.Tool {
	return []*adapter.Tool{conformance.SlowCompute(), conformance.CrashJob(), conformance.MultiInput()}
}

// rpcClient speaks raw JSON-RPC to the gateway in the 2026-07-28 era, as
// one caller (a JWT subject), declaring the Tasks extension on every
// request. The go-sdk client drops a CreateTaskResult's taskId, so the task
// methods are written by hand, as the conformance suite's client does.
type rpcClient struct {
	token string
	id    int
}

func newRPCClient(t *testing.T, subject string) *rpcClient {
	t.Helper()
	token, err := stack.MintToken(map[string]any{"sub": subject, "scope": demoScope})
	if err != nil {
		t.Fatal(err)
	}
	return &rpcClient{token: token}
}

// rpcError is a JSON-RPC error.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// call sends one request; name is its Mcp-Name header (the tool, or the
// task id). It returns the result, or the JSON-RPC error.
func (c *rpcClient) call(t *testing.T, method, name string, params map[string]any) (map[string]any, *rpcError) {
	t.Helper()
	c.id++
	res, rerr, err := rpcPost(t.Context(), c.token, c.id, method, name, params)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return res, rerr
}

// rpcPost sends one modern-era request declaring the Tasks extension, as
// the caller of token: the result, or the JSON-RPC error, or why there is
// neither. Safe from any goroutine.
func rpcPost(ctx context.Context, token string, id int, method, name string, params map[string]any) (map[string]any, *rpcError, error) {
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "mcpfn-tasks-e2e", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{tasksExtension: map[string]any{}}},
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, stack.MCPURL(), bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		raw = lastSSEData(raw)
	}
	var msg struct {
		Result map[string]any `json:"result"`
		Error  *rpcError      `json:"error"`
	}
	if err := json.Unmarshal(raw, &msg); err != nil || (msg.Result == nil && msg.Error == nil) {
		return nil, nil, fmt.Errorf("HTTP %d, not a JSON-RPC response: %s (%v)", resp.StatusCode, raw, err)
	}
	return msg.Result, msg.Error, nil
}

// lastSSEData is the data of an SSE stream's last event (the response).
func lastSSEData(b []byte) []byte {
	var last []byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 8<<20)
	for sc.Scan() {
		if d, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:")); ok {
			last = bytes.Clone(bytes.TrimSpace(d))
		}
	}
	return last
}

// mustCall is call that fails the test on a JSON-RPC error.
func (c *rpcClient) mustCall(t *testing.T, method, name string, params map[string]any) map[string]any {
	t.Helper()
	res, rerr := c.call(t, method, name, params)
	if rerr != nil {
		t.Fatalf("%s %s: %v", method, name, rerr)
	}
	return res
}

// startTask calls tool and expects a CreateTaskResult; it returns the id.
func (c *rpcClient) startTask(t *testing.T, tool string, args map[string]any) string {
	t.Helper()
	res := c.mustCall(t, "tools/call", tool, map[string]any{"name": tool, "arguments": args})
	id, _ := res["taskId"].(string)
	if res["resultType"] != "task" || id == "" || res["status"] != "working" {
		t.Fatalf("%s with the tasks extension answered %v, want a working CreateTaskResult", tool, res)
	}
	return id
}

// getTask is tasks/get.
func (c *rpcClient) getTask(t *testing.T, id string) map[string]any {
	t.Helper()
	return c.mustCall(t, "tasks/get", id, map[string]any{"taskId": id})
}

// pollInterval is a task's pollIntervalMs (1 s when it has none).
func pollInterval(task map[string]any) time.Duration {
	if ms, ok := task["pollIntervalMs"].(float64); ok && ms > 0 {
		return time.Duration(ms) * time.Millisecond
	}
	return time.Second
}

// pollUntil polls tasks/get, as a client does, every pollIntervalMs until
// the task's status is one of want or deadline passes; it returns every
// answer, the last one last.
func (c *rpcClient) pollUntil(t *testing.T, id string, deadline time.Duration, want ...string) []map[string]any {
	t.Helper()
	var seen []map[string]any
	end := time.Now().Add(deadline)
	for {
		task := c.getTask(t, id)
		seen = append(seen, task)
		for _, w := range want {
			if task["status"] == w {
				return seen
			}
		}
		if time.Now().After(end) {
			t.Fatalf("task %s still %v after %v, want %v", id, task["status"], deadline, want)
		}
		time.Sleep(pollInterval(task))
	}
}

// notFound fails unless rerr is the -32602 another caller's task gets.
func notFound(t *testing.T, what string, res map[string]any, rerr *rpcError) {
	t.Helper()
	if rerr == nil || rerr.Code != -32602 {
		t.Errorf("%s by another caller answered %v / %v, want -32602 (not found)", what, res, rerr)
	}
}

// taskRows reads the audit rows of a task (consistent scan: the table is
// small and local).
func taskRows(t *testing.T, taskID string) []audit.Row {
	t.Helper()
	items := scanAll(t, &dynamodb.ScanInput{
		TableName:                 aws.String(stack.AuditTable()),
		ConsistentRead:            aws.Bool(true),
		FilterExpression:          aws.String("taskId = :t"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":t": &types.AttributeValueMemberS{Value: taskID}},
	})
	var rows []audit.Row
	if err := attributevalue.UnmarshalListOfMaps(items, &rows); err != nil {
		t.Fatal(err)
	}
	return rows
}

// scanAll returns every item a Scan matches, page after page. One Scan
// reads at most 1 MB of the table before it filters: once the suite's
// shared tables outgrow that (a few thousand rows, sooner with go test
// -count=N), a single page finds a row only if it happens to sort into the
// first megabyte.
func scanAll(t *testing.T, in *dynamodb.ScanInput) []map[string]types.AttributeValue {
	t.Helper()
	var items []map[string]types.AttributeValue
	p := dynamodb.NewScanPaginator(stack.DynamoDB(), in)
	for p.HasMorePages() {
		page, err := p.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, page.Items...)
	}
	return items
}

// settledRows returns a task's audit rows once the task has ended: its run
// writes its row after answering, before its environment is released, so
// the rows are all there once the stack is settled.
func settledRows(t *testing.T, taskID string) []audit.Row {
	t.Helper()
	if err := stack.Settle(t.Context()); err != nil {
		t.Fatal(err)
	}
	rows := taskRows(t, taskID)
	if len(rows) == 0 {
		t.Fatalf("task %s: no audit row once the stack is settled", taskID)
	}
	return rows
}

// logLines counts the lines of a function's log that contain s.
func logLines(t *testing.T, function, s string) int {
	t.Helper()
	b, err := os.ReadFile(stack.LogPath(function))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), s)
}

// TestTaskIsCreatedPolledShowsProgressAndAnswers: a long task (60 s with
// MCPFN_LONG_TESTS=1 or in CI, else 5 s) is created at once, shows its
// progress in statusMessage while it runs, completes with its result, is
// audited with its task id, and is invisible to another caller.
func TestTaskIsCreatedPolledShowsProgressAndAnswers(t *testing.T) {
	seconds := longTaskSeconds()
	alice, mallory := newRPCClient(t, unique("task-owner")), newRPCClient(t, unique("task-other"))
	label := unique("long")

	start := time.Now()
	id := alice.startTask(t, conformance.ToolSlowCompute, map[string]any{"seconds": seconds, "label": label})
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the CreateTaskResult took %v: a task must be answered at once", took)
	}

	// Another caller sees nothing of it, and cannot cancel it.
	res, rerr := mallory.call(t, "tasks/get", id, map[string]any{"taskId": id})
	notFound(t, "tasks/get", res, rerr)
	res, rerr = mallory.call(t, "tasks/cancel", id, map[string]any{"taskId": id})
	notFound(t, "tasks/cancel", res, rerr)

	seen := alice.pollUntil(t, id, time.Duration(seconds)*time.Second+time.Minute, "completed", "failed", "cancelled")
	final := seen[len(seen)-1]
	if final["status"] != "completed" {
		t.Fatalf("task ended %v: %v", final["status"], final)
	}
	progress := map[string]bool{}
	for _, s := range seen[:len(seen)-1] {
		if s["status"] != "working" {
			t.Errorf("a running task was %v", s["status"])
		}
		if msg, _ := s["statusMessage"].(string); strings.Contains(msg, label) {
			progress[msg] = true
		}
	}
	if len(progress) < 2 {
		t.Errorf("statusMessages while running: %v; want the handler's progress to advance (at least two)", progress)
	}
	if b, _ := json.Marshal(final["result"]); !strings.Contains(string(b), label) {
		t.Errorf("completed task's result %s does not carry the answer", b)
	}
	res, rerr = mallory.call(t, "tasks/get", id, map[string]any{"taskId": id})
	notFound(t, "tasks/get of a finished task", res, rerr)

	rows := settledRows(t, id)
	if r := rows[0]; len(rows) != 1 || r.Tool != conformance.ToolSlowCompute || !r.OK || r.Cancelled {
		t.Errorf("audit rows of the task: %+v, want one successful slow_compute row", rows)
	}
}

// TestTaskCancelledMidRunStopsItsHandler: tasks/cancel on a running task
// ends it cancelled, and the handler sees its context end within two poll
// intervals (it logs when it stops; its audit row says cancelled). Another
// caller cannot see the cancelled task.
func TestTaskCancelledMidRunStopsItsHandler(t *testing.T) {
	alice, mallory := newRPCClient(t, unique("cancel-owner")), newRPCClient(t, unique("cancel-other"))
	label := unique("cancel")
	id := alice.startTask(t, conformance.ToolSlowCompute, map[string]any{"seconds": 600, "label": label})

	// Running: the handler's progress is in the record.
	var running map[string]any
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		running = alice.getTask(t, id)
		if msg, _ := running["statusMessage"].(string); running["status"] == "working" && strings.Contains(msg, label) {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the task never showed its handler running: %v", running)
		}
	}
	poll := pollInterval(running)

	if ack := alice.mustCall(t, "tasks/cancel", id, map[string]any{"taskId": id}); ack["resultType"] != "complete" || ack["status"] != nil {
		t.Errorf("tasks/cancel acknowledged %v, want the bare ack", ack)
	}
	cancelled := time.Now()
	if got := alice.getTask(t, id)["status"]; got != "cancelled" {
		t.Errorf("status right after tasks/cancel: %v", got)
	}
	within := 2 * poll
	for logLines(t, taskSlowFunction, conformance.StoppedMarker+label) == 0 {
		if time.Since(cancelled) > within {
			t.Fatalf("the handler did not see its context end within two poll intervals (%v)", within)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("handler stopped %v after tasks/cancel (watch interval %v, poll interval %v)", time.Since(cancelled).Round(time.Millisecond), taskWatch, poll)

	rows := settledRows(t, id)
	if r := rows[0]; len(rows) != 1 || !r.Cancelled || r.ErrorCode != string(adapter.CodeCancelled) {
		t.Errorf("audit rows of the cancelled task: %+v, want one row saying cancelled", rows)
	}
	if got := alice.getTask(t, id)["status"]; got != "cancelled" {
		t.Errorf("a cancelled task became %v", got)
	}
	res, rerr := mallory.call(t, "tasks/get", id, map[string]any{"taskId": id})
	notFound(t, "tasks/get of a cancelled task", res, rerr)
}

// TestDestructiveTaskThatCrashesRunsOnceAndFails: the function of a
// destructive task exits mid-handler. Lambda retries the asynchronous
// invocation; the retry finds the first attempt's pending audit row and does
// not run the handler again; the task ends failed.
func TestDestructiveTaskThatCrashesRunsOnceAndFails(t *testing.T) {
	alice := newRPCClient(t, unique("crash-owner"))
	entity := unique("crash")
	before := stack.Invocations(taskCrashFunction)
	id := alice.startTask(t, conformance.ToolCrashJob, map[string]any{"id": entity})

	seen := alice.pollUntil(t, id, time.Minute, "completed", "failed", "cancelled")
	final := seen[len(seen)-1]
	if final["status"] != "failed" || final["error"] == nil || final["result"] != nil {
		t.Fatalf("a crashed task ended %v, want failed with an error", final)
	}
	rows := settledRows(t, id)
	if len(rows) != 1 {
		t.Fatalf("audit rows %+v, want the one call's row", rows)
	}
	if n := logLines(t, taskCrashFunction, conformance.CrashMarker+rows[0].CallID); n != 1 {
		t.Errorf("the destructive handler ran %d times, want once", n)
	}
	t.Logf("invocations of the crashing function: %d; its row: %+v", stack.Invocations(taskCrashFunction)-before, rows[0])
}

// TestProgressReachesTheGoSDKClient: a synchronous call with a progress
// token, through the JWT gateway, delivers the handler's progress to the
// go-sdk client's ProgressNotificationHandler before the result.
func TestProgressReachesTheGoSDKClient(t *testing.T) {
	token, err := stack.MintToken(map[string]any{"sub": unique("progress"), "scope": demoScope})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []float64
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpfn-progress-e2e", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, req.Params.Progress)
		},
	})
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{
		Endpoint:   stack.MCPURL(),
		HTTPClient: &http.Client{Transport: bearer{token}, Timeout: time.Minute},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	params := &mcp.CallToolParams{Name: conformance.ToolSlowCompute, Arguments: map[string]any{"seconds": 3, "label": "sdk"}}
	params.SetProgressToken("e2e-progress")
	res, err := cs.CallTool(t.Context(), params)
	if err != nil || res.IsError {
		t.Fatalf("slow_compute with a progress token: %v %+v", err, res)
	}
	// The handler reports 0, 1 and 2 of 3, a second apart; the throttle
	// passes them all.
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 3 || got[0] != 0 || got[2] != 2 {
		t.Fatalf("progress %v before the result, want 0, 1, 2", got)
	}
}
