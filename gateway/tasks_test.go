package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/internal/dynamolocal"
	"github.com/mcpfn/mcpfn/taskstore"
)

// ---- the task tools and their environment ----

type jobIn struct {
	EntityID string `json:"entityId"`
	// Block holds the handler until its context ends (a cancel).
	Block bool `json:"block,omitempty"`
	// Ask makes the first round ask for input ("ok").
	Ask bool `json:"ask,omitempty"`
}

// jobs is what the task tools' handlers report to the test.
type jobs struct {
	started   chan string // the entity of every handler that started
	cancelled chan string // the entity of every handler whose context ended
}

func newJobs() *jobs {
	return &jobs{started: make(chan string, 16), cancelled: make(chan string, 16)}
}

func (j *jobs) handler(ctx context.Context, call *adapter.Call, in jobIn) (facts, error) {
	j.started <- in.EntityID
	if in.Block {
		select {
		case <-ctx.Done():
			j.cancelled <- in.EntityID
			return facts{}, ctx.Err()
		case <-time.After(8 * time.Second):
			return facts{}, adapter.NewError(adapter.CodeTimeout, "never cancelled")
		}
	}
	if in.Ask {
		ok, answered := call.InputResponses()["ok"]
		if !answered {
			return facts{}, adapter.RequireInput(map[string]adapter.InputRequest{
				"ok":   {Method: "elicitation/create", Params: map[string]any{"message": "Export " + in.EntityID + "?"}},
				"note": {Method: "elicitation/create", Params: map[string]any{"message": "Why?"}},
			}, "round-1")
		}
		in.EntityID += "+" + string(ok)
	}
	return factsOf(call, in.EntityID), nil
}

const (
	optionalTool = "report_build"   // TaskOptional
	requiredTool = "archive_export" // TaskRequired
	securedTool  = "ledger_close"   // TaskOptional, needs the scope jobs:run
	intakeTool   = "intake_export"  // TaskRequired, TaskAfterInput
)

// intake asks for a name synchronously, then asks to become a task, and
// in the task run uses the name.
func (j *jobs) intake(_ context.Context, call *adapter.Call, in jobIn) (facts, error) {
	name, ok := call.InputResponses()["name"]
	switch {
	case !ok:
		return facts{}, adapter.RequireInput(map[string]adapter.InputRequest{
			"name": {Method: "elicitation/create", Params: map[string]any{"message": "Name?"}},
		}, "intake")
	case call.TaskID() == "":
		return facts{}, adapter.StartTask()
	}
	return factsOf(call, in.EntityID+"+"+string(name)), nil
}

// withTasks gives the gateway a tasks table in DynamoDB Local (from
// template.yaml) and two task tools; their functions share the table.
func withTasks(t *testing.T, j *jobs, edit ...func(*Config)) envOption {
	return withTasksIn(t, j, nil, edit...)
}

// tasksTable is the gateway's tasks table as any writer of it sees it (the
// test's credentials, outside any role).
type tasksTable struct {
	client *dynamodb.Client
	name   string
}

// withTasksIn is withTasks that also hands the test its table.
func withTasksIn(t *testing.T, j *jobs, tb *tasksTable, edit ...func(*Config)) envOption {
	return func(c *Config) {
		srv, table := dynamolocal.TemplateTableForTest(t, "TasksTable", "tasks")
		if tb != nil {
			tb.client, tb.name = srv.Client(t.Context()), table
		}
		c.Tasks = taskstore.New(srv.Client(t.Context()), table, taskstore.Options{PollInterval: 100 * time.Millisecond})
		for _, d := range []adapter.ToolDef[jobIn, facts]{
			{Name: optionalTool, TaskSupport: adapter.TaskOptional},
			{Name: requiredTool, TaskSupport: adapter.TaskRequired},
			{Name: securedTool, TaskSupport: adapter.TaskOptional, Scopes: []string{"jobs:run"}},
			{Name: intakeTool, TaskSupport: adapter.TaskRequired, TaskAfterInput: true, Handler: j.intake},
		} {
			d.Description = "A long job."
			if d.Handler == nil {
				d.Handler = j.handler
			}
			c.Tools = append(c.Tools, adapter.MustDefine(d))
			c.Functions[d.Name] = "fn-" + d.Name
		}
		for _, f := range edit {
			f(c)
		}
	}
}

// ---- raw JSON-RPC in the modern era ----

type rpcAnswer struct {
	status int
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// taskView is a CreateTaskResult or tasks/get result as the client reads it.
type taskView struct {
	ResultType     string                     `json:"resultType"`
	TaskID         string                     `json:"taskId"`
	Status         string                     `json:"status"`
	TTLMs          *int64                     `json:"ttlMs"`
	PollIntervalMs *int64                     `json:"pollIntervalMs"`
	CreatedAt      string                     `json:"createdAt"`
	InputRequests  map[string]json.RawMessage `json:"inputRequests"`
	Result         *mcp.CallToolResult        `json:"result"`
	Error          *taskstore.RPCError        `json:"error"`
	RequestState   json.RawMessage            `json:"requestState"`
}

var rpcSeq atomic.Int64

// rpc sends one modern-era request as the conformance suite does: its
// _meta, the Mcp-Method and Mcp-Name headers, the tasks extension declared
// when declare is set. header overrides the headers.
func (e *env) rpc(t *testing.T, token, method string, params map[string]any, declare bool, header http.Header) rpcAnswer {
	t.Helper()
	return e.rpcVia(t, e.post, token, method, params, declare, header)
}

// rpcVia is rpc sent with post (e.post, or e.postWithin's).
func (e *env) rpcVia(t *testing.T, post func(testing.TB, string, http.Header) (*http.Response, []byte), token, method string, params map[string]any, declare bool, header http.Header) rpcAnswer {
	t.Helper()
	caps := map[string]any{}
	if declare {
		caps["extensions"] = map[string]any{TasksExtension: map[string]any{}}
	}
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "tasks-test", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": caps,
	}
	id := rpcSeq.Add(1)
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	h := bearer(token)
	h.Set("Mcp-Protocol-Version", "2026-07-28")
	h.Set("Mcp-Method", method)
	if n, ok := params["name"].(string); ok {
		h.Set("Mcp-Name", n)
	}
	if n, ok := params["taskId"].(string); ok {
		h.Set("Mcp-Name", n)
	}
	for k, vs := range header {
		h[k] = vs
	}
	resp, b := post(t, string(body), h)
	a := rpcAnswer{status: resp.StatusCode}
	if err := json.Unmarshal(b, &a); err != nil {
		t.Fatalf("%s: %d %s", method, resp.StatusCode, b)
	}
	return a
}

func (a rpcAnswer) code() int {
	if a.Error == nil {
		return 0
	}
	return a.Error.Code
}

func (a rpcAnswer) view(t *testing.T) taskView {
	t.Helper()
	if a.Error != nil {
		t.Fatalf("error %d %s", a.Error.Code, a.Error.Message)
	}
	var v taskView
	if err := json.Unmarshal(a.Result, &v); err != nil {
		t.Fatalf("%s: %v", a.Result, err)
	}
	return v
}

func (e *env) createTask(t *testing.T, token, tool string, in jobIn) taskView {
	t.Helper()
	a := e.rpc(t, token, "tools/call", map[string]any{"name": tool, "arguments": in}, true, nil)
	v := a.view(t)
	if v.ResultType != "task" || v.TaskID == "" || v.Status != "working" {
		t.Fatalf("want a CreateTaskResult, got %d %s", a.status, a.Result)
	}
	return v
}

func (e *env) getTask(t *testing.T, token, id string) taskView {
	t.Helper()
	return e.rpc(t, token, "tasks/get", map[string]any{"taskId": id}, true, nil).view(t)
}

// await polls tasks/get, as a client does, until the task is in state.
func (e *env) await(t *testing.T, token, id, state string) taskView {
	t.Helper()
	deadline := time.Now().Add(8 * time.Second)
	for {
		v := e.getTask(t, token, id)
		if v.Status == state {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s is %s, want %s", id, v.Status, state)
		}
		time.Sleep(time.Duration(*v.PollIntervalMs) * time.Millisecond)
	}
}

func (e *env) alice(t *testing.T) string { return e.iss.token(t, "alice", nil) }

// ---- the tests ----

// TestTasksExtensionAdvertised: a gateway with a tasks table advertises the
// extension in server/discover (modern) and initialize (legacy); one
// without does not.
func TestTasksExtensionAdvertised(t *testing.T) {
	with := newEnv(t, withTasks(t, newJobs()))
	without := newEnv(t)
	for _, tc := range []struct {
		e    *env
		want bool
	}{{with, true}, {without, false}} {
		a := tc.e.rpc(t, tc.e.alice(t), "server/discover", nil, false, nil)
		var d struct {
			Capabilities struct {
				Extensions map[string]any `json:"extensions"`
			} `json:"capabilities"`
		}
		if err := json.Unmarshal(a.Result, &d); err != nil || a.Error != nil {
			t.Fatalf("server/discover: %s %v", a.Result, a.Error)
		}
		if _, got := d.Capabilities.Extensions[TasksExtension]; got != tc.want {
			t.Errorf("server/discover extensions %v, want tasks %v", d.Capabilities.Extensions, tc.want)
		}
		cs := tc.e.mustConnect(t, "legacy", "2025-11-25", bearer(tc.e.alice(t)))
		if _, got := cs.InitializeResult().Capabilities.Extensions[TasksExtension]; got != tc.want {
			t.Errorf("initialize extensions %v, want tasks %v", cs.InitializeResult().Capabilities.Extensions, tc.want)
		}
	}
}

// TestTaskCreatedPolledCompleted: a declaring tools/call of a task tool is
// answered at once with the flat CreateTaskResult, the function is invoked
// asynchronously (Event) with the task, tasks/get resolves at once and
// inlines the result when the task completes.
func TestTaskCreatedPolledCompleted(t *testing.T) {
	j := newJobs()
	e := newEnv(t, withTasks(t, j))
	tok := e.alice(t)
	a := e.rpc(t, tok, "tools/call", map[string]any{"name": optionalTool, "arguments": jobIn{EntityID: "r-1"}}, true, nil)
	v := a.view(t)
	if a.status != http.StatusOK || v.ResultType != "task" || v.Status != "working" || v.TTLMs == nil || v.PollIntervalMs == nil ||
		v.Result != nil || v.RequestState != nil || !strings.Contains(string(a.Result), `"createdAt"`) {
		t.Fatalf("CreateTaskResult %d %s", a.status, a.Result)
	}
	if g := e.getTask(t, tok, v.TaskID); g.TaskID != v.TaskID || g.ResultType != "complete" {
		t.Fatalf("tasks/get right after create: %+v", g)
	}
	done := e.await(t, tok, v.TaskID, "completed")
	f := factsFrom(t, done.Result)
	if f.EntityID != "r-1" || f.Subject != "alice" || f.AuthMethod != "jwt" {
		t.Fatalf("the function saw %+v", f)
	}
	e.api.mu.Lock()
	defer e.api.mu.Unlock()
	last := e.api.headers[len(e.api.headers)-1]
	if last.Get("X-Amz-Invocation-Type") != "Event" {
		t.Fatalf("the task run was invoked %q, want Event", last.Get("X-Amz-Invocation-Type"))
	}
}

// TestTaskResultsCarryResultType: a completed task's tasks/get result is
// the Tasks extension's shape (SEP-2663, @modelcontextprotocol/ext-tasks'
// GetTaskResult): resultType "complete" on the task, and on the inlined
// CallToolResult, which 2026-07-28 requires on every result and the
// extension's client validates (content array included).
func TestTaskResultsCarryResultType(t *testing.T) {
	e := newEnv(t, withTasks(t, newJobs()))
	tok := e.alice(t)
	v := e.createTask(t, tok, optionalTool, jobIn{EntityID: "rt-1"})
	e.await(t, tok, v.TaskID, "completed")
	a := e.rpc(t, tok, "tasks/get", map[string]any{"taskId": v.TaskID}, true, nil)
	var got struct {
		ResultType string `json:"resultType"`
		Result     struct {
			ResultType *string          `json:"resultType"`
			Content    []map[string]any `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal(a.Result, &got); err != nil || got.ResultType != "complete" ||
		got.Result.ResultType == nil || *got.Result.ResultType != "complete" || got.Result.Content == nil {
		t.Fatalf("tasks/get of a completed task: %s (%v)", a.Result, err)
	}
}

func TestCompleteResult(t *testing.T) {
	for in, want := range map[string]string{
		`{"content":[]}`:                         `{"resultType":"complete","content":[]}`,
		` { "content":[] }`:                      `{"resultType":"complete","content":[] }`,
		`{}`:                                     `{"resultType":"complete"}`,
		`{"resultType":"complete","content":[]}`: `{"resultType":"complete","content":[]}`,
		`{"content":[],"resultType":"input_required"}`: `{"content":[],"resultType":"input_required"}`,
		``:          ``,
		`[1]`:       `[1]`,
		`"a"`:       `"a"`,
		`{"broken"`: `{"broken"`,
	} {
		if got := string(completeResult(json.RawMessage(in))); got != want {
			t.Errorf("completeResult(%s) = %s, want %s", in, got, want)
		}
	}
}

// TestTaskSupportDecidesTheAnswer: required without the extension is
// -32021 naming the extension (HTTP 400) and invokes nothing; optional
// without it runs synchronously; a forbidden tool stays synchronous even
// when the request declares the extension.
func TestTaskSupportDecidesTheAnswer(t *testing.T) {
	e := newEnv(t, withTasks(t, newJobs()))
	tok := e.alice(t)
	a := e.rpc(t, tok, "tools/call", map[string]any{"name": requiredTool, "arguments": jobIn{EntityID: "x"}}, false, nil)
	if a.code() != -32021 || a.status != http.StatusBadRequest || !strings.Contains(string(a.Error.Data), `"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}`) {
		t.Fatalf("required, undeclared: %d %+v", a.status, a.Error)
	}
	if n := e.api.count("fn-" + requiredTool); n != 0 {
		t.Fatalf("the function was invoked %d times", n)
	}
	for _, tc := range []struct {
		tool    string
		declare bool
	}{{optionalTool, false}, {"echo_call", true}} {
		a := e.rpc(t, tok, "tools/call", map[string]any{"name": tc.tool, "arguments": jobIn{EntityID: "s"}}, tc.declare, nil)
		var v taskView
		var res mcp.CallToolResult
		if json.Unmarshal(a.Result, &v) != nil || json.Unmarshal(a.Result, &res) != nil || v.ResultType != "complete" || v.TaskID != "" || res.IsError {
			t.Fatalf("%s (declared %v): %s %v", tc.tool, tc.declare, a.Result, a.Error)
		}
	}
}

// TestTasksMethodsAreGated: tasks/get, update and cancel need the declared
// extension (-32021), matching Mcp-Method/Mcp-Name headers (-32020), and a
// task of the caller's own (-32602, as for an unknown id); tasks/result and
// tasks/list do not exist (-32601).
func TestTasksMethodsAreGated(t *testing.T) {
	e := newEnv(t, withTasks(t, newJobs()))
	alice, bob := e.alice(t), e.iss.token(t, "bob", nil)
	v := e.createTask(t, alice, optionalTool, jobIn{EntityID: "g"})
	params := func(id string) map[string]any {
		return map[string]any{"taskId": id, "inputResponses": map[string]any{"ok": map[string]any{}}}
	}
	for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		if a := e.rpc(t, alice, m, params(v.TaskID), false, nil); a.code() != -32021 || a.status != http.StatusBadRequest {
			t.Errorf("%s undeclared: %d %+v", m, a.status, a.Error)
		}
		if a := e.rpc(t, alice, m, params(v.TaskID), true, http.Header{"Mcp-Name": {"another-task"}}); a.code() != -32020 || a.status != http.StatusBadRequest {
			t.Errorf("%s, Mcp-Name mismatch: %d %+v", m, a.status, a.Error)
		}
		if a := e.rpc(t, alice, m, params(v.TaskID), true, http.Header{"Mcp-Name": nil}); a.code() != -32020 {
			t.Errorf("%s, no Mcp-Name: %d %+v", m, a.status, a.Error)
		}
		for who, tc := range map[string]struct{ token, id string }{"bob": {bob, v.TaskID}, "unknown id": {alice, "AAAAAAAAAAAAAAAAAAAAAA"}} {
			// -32602 like an unknown tool's: a JSON-RPC error on 200, not
			// a transport failure (rpcstatus.go).
			if a := e.rpc(t, tc.token, m, params(tc.id), true, nil); a.code() != -32602 || a.status != http.StatusOK {
				t.Errorf("%s by %s: %d %+v", m, who, a.status, a.Error)
			}
		}
	}
	for _, m := range []string{"tasks/result", "tasks/list"} {
		if a := e.rpc(t, alice, m, params(v.TaskID), true, nil); a.code() != -32601 || a.status != http.StatusNotFound {
			t.Errorf("%s: %d %+v", m, a.status, a.Error)
		}
	}
	// Bob's attempts changed nothing: alice's task completes.
	e.await(t, alice, v.TaskID, "completed")
}

// TestTaskCancel: tasks/cancel acknowledges with resultType "complete" and
// nothing else, the running handler's context is cancelled, the task is
// cancelled, and cancelling the terminal task again gets the same ack.
func TestTaskCancel(t *testing.T) {
	j := newJobs()
	e := newEnv(t, withTasks(t, j))
	tok := e.alice(t)
	v := e.createTask(t, tok, optionalTool, jobIn{EntityID: "c-1", Block: true})
	waitFor(t, j.started, "c-1")
	cancel := func() {
		t.Helper()
		a := e.rpc(t, tok, "tasks/cancel", map[string]any{"taskId": v.TaskID}, true, nil)
		if a.Error != nil || string(a.Result) != `{"resultType":"complete"}` {
			t.Fatalf("cancel ack %s %+v", a.Result, a.Error)
		}
		if g := e.getTask(t, tok, v.TaskID); g.Status != "cancelled" {
			t.Fatalf("after cancel: %s", g.Status)
		}
	}
	cancel()
	waitFor(t, j.cancelled, "c-1")
	cancel() // terminal now: the same ack
}

// TestTaskInputRoundTrip: a task asks for input (input_required with its
// requests, never the sealed state); tasks/update acks every update, an
// unknown key changes nothing, the answer re-invokes the function, which
// completes with it.
func TestTaskInputRoundTrip(t *testing.T) {
	aud, client, table := auditTable(t)
	j := newJobs()
	e := newEnv(t, withTasks(t, j))
	// The function audits, as deployed: each round leaves its row.
	fn := "fn-" + requiredTool
	for _, tl := range e.cfgUsed.Tools {
		if tl.Name() == requiredTool {
			e.api.mu.Lock()
			e.api.functions[fn] = adapter.New(tl, adapter.WithAuditor(aud), adapter.WithTaskStore(e.cfgUsed.Tasks),
				adapter.WithLogger(e.cfgUsed.Logger), adapter.WithCallVerifier(e.verifiers[fn]))
			e.api.mu.Unlock()
		}
	}
	tok := e.alice(t)
	v := e.createTask(t, tok, requiredTool, jobIn{EntityID: "a-1", Ask: true})
	ir := e.await(t, tok, v.TaskID, "input_required")
	if !strings.Contains(string(ir.InputRequests["ok"]), `"method":"elicitation/create"`) || ir.RequestState != nil {
		t.Fatalf("input_required view %+v", ir)
	}
	update := func(responses map[string]any) {
		t.Helper()
		a := e.rpc(t, tok, "tasks/update", map[string]any{"taskId": v.TaskID, "inputResponses": responses}, true, nil)
		if a.Error != nil || string(a.Result) != `{"resultType":"complete"}` {
			t.Fatalf("update ack %s %+v", a.Result, a.Error)
		}
	}
	update(map[string]any{"unknown": map[string]any{"action": "accept"}})
	if g := e.getTask(t, tok, v.TaskID); g.Status != "input_required" {
		t.Fatalf("after an unknown key: %s", g.Status)
	}
	update(map[string]any{"ok": map[string]any{"action": "accept"}})
	// Partly answered: still input_required, listing only what is pending.
	if g := e.getTask(t, tok, v.TaskID); g.Status != "input_required" || len(g.InputRequests) != 1 || g.InputRequests["note"] == nil {
		t.Fatalf("after a partial answer: %s %v", g.Status, g.InputRequests)
	}
	update(map[string]any{"note": map[string]any{"action": "decline"}})
	done := e.await(t, tok, v.TaskID, "completed")
	if f := factsFrom(t, done.Result); f.EntityID != `a-1+{"action":"accept"}` || f.Subject != "alice" {
		t.Fatalf("the second round saw %+v", f)
	}
	// A client can see the task completed before the run that completed
	// it has written its row (the task record first, the row as the
	// invocation ends): the rows once the runs have ended.
	e.api.async.Wait()
	if rows := taskRows(t, client, table, v.TaskID); len(rows) != 2 || attr(rows[0], "callId") == attr(rows[1], "callId") {
		t.Fatalf("want one row per round, each its own call id: %v", rows)
	}
}

// TestTaskAfterSynchronousInput: a TaskAfterInput tool's first round asks
// for input synchronously (no task); the round that answers it, which the
// handler turns into a task (StartTask), is answered with the
// CreateTaskResult, and the task run sees the answer.
func TestTaskAfterSynchronousInput(t *testing.T) {
	e := newEnv(t, withTasks(t, newJobs()))
	tok := e.alice(t)
	a := e.rpc(t, tok, "tools/call", map[string]any{"name": intakeTool, "arguments": jobIn{EntityID: "i-1"}}, true, nil)
	var round1 struct {
		ResultType    string                     `json:"resultType"`
		TaskID        string                     `json:"taskId"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
	}
	if err := json.Unmarshal(a.Result, &round1); err != nil || round1.ResultType != "input_required" || round1.TaskID != "" || round1.InputRequests["name"] == nil {
		t.Fatalf("round 1: %s %+v", a.Result, a.Error)
	}
	params := map[string]any{"name": intakeTool, "arguments": jobIn{EntityID: "i-1"},
		"inputResponses": map[string]any{"name": map[string]any{"action": "accept", "content": map[string]any{"name": "Alice"}}}}
	if round1.RequestState != "" {
		params["requestState"] = round1.RequestState
	}
	a = e.rpc(t, tok, "tools/call", params, true, nil)
	v := a.view(t)
	if v.ResultType != "task" || v.TaskID == "" || v.RequestState != nil {
		t.Fatalf("round 2: %s", a.Result)
	}
	done := e.await(t, tok, v.TaskID, "completed")
	if f := factsFrom(t, done.Result); !strings.Contains(f.EntityID, "Alice") || f.Subject != "alice" {
		t.Fatalf("the task run saw %+v", f)
	}
}

// TestTaskAbandonedAfterItsRunWindow: a task whose function never ran (the
// event was lost, every attempt crashed) is reported failed by tasks/get
// once its run window has passed, and stays failed.
func TestTaskAbandonedAfterItsRunWindow(t *testing.T) {
	aud, client, table := auditTable(t)
	e := newEnv(t, withTasks(t, newJobs(), func(c *Config) { c.Recorder = aud }))
	e.api.setMisbehave("fn-"+optionalTool, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusAccepted) })
	tok := e.alice(t)
	v := e.createTask(t, tok, optionalTool, jobIn{EntityID: "lost"})
	if g := e.getTask(t, tok, v.TaskID); g.Status != "working" {
		t.Fatalf("before the window: %s", g.Status)
	}
	var skew atomic.Int64
	e.gw.now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	skew.Store(int64(e.gw.cfg.TaskRunWindow + maxFunctionRun + time.Second))
	g := e.getTask(t, tok, v.TaskID)
	if g.Status != "failed" || g.Error == nil || g.Error.Code != -32603 {
		t.Fatalf("after the window: %+v", g)
	}
	skew.Store(0)
	if g := e.getTask(t, tok, v.TaskID); g.Status != "failed" {
		t.Fatalf("failed is terminal: %s", g.Status)
	}
	// The gateway wrote the lost run's row: the function never did.
	rows := taskRows(t, client, table, v.TaskID)
	if len(rows) != 1 || attr(rows[0], "stage") != StageGateway || attr(rows[0], "errorCode") != "TIMEOUT" {
		t.Fatalf("rows %v", rows)
	}
}

// TestTaskCreationFailuresAreAudited: a task whose Event invoke Lambda
// refuses is answered as the failed call it is (not as a task), its task
// is recorded failed, and the gateway writes the call's row naming the
// task; a caller refused by authorization gets no task and a FORBIDDEN row.
func TestTaskCreationFailuresAreAudited(t *testing.T) {
	aud, client, table := auditTable(t)
	rec := &countingRecorder{Recorder: aud}
	j := newJobs()
	e := newEnv(t, withTasks(t, j, func(c *Config) { c.Recorder = rec }))
	e.api.setMisbehave("fn-"+optionalTool, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Amzn-ErrorType", "TooManyRequestsException")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`{"Type":"User","message":"Rate exceeded","Reason":"ReservedFunctionConcurrentInvocationLimitExceeded"}`))
	})
	tok := e.alice(t)
	for _, tc := range []struct {
		tool, code string
		task       bool
	}{{optionalTool, "RATE_LIMITED", true}, {securedTool, "FORBIDDEN", false}} {
		a := e.rpc(t, tok, "tools/call", map[string]any{"name": tc.tool, "arguments": jobIn{EntityID: "f"}}, true, nil)
		var res mcp.CallToolResult
		if err := json.Unmarshal(a.Result, &res); err != nil || !res.IsError || strings.Contains(string(a.Result), `"taskId"`) {
			t.Fatalf("%s: %s %+v", tc.tool, a.Result, a.Error)
		}
		te := toolErrorOf(t, &res)
		if te.Error != tc.code {
			t.Fatalf("%s: %+v", tc.tool, te)
		}
		rows := rowsOf(t, client, table, te.callID())
		if len(rows) != 1 || attr(rows[0], "stage") != StageGateway || attr(rows[0], "errorCode") != tc.code {
			t.Fatalf("%s: rows %v", tc.tool, rows)
		}
		taskID := attr(rows[0], "taskId")
		if (taskID != "") != tc.task {
			t.Fatalf("%s: row task %q", tc.tool, taskID)
		}
		if taskID != "" {
			got, err := e.cfgUsed.Tasks.Get(t.Context(), aliceKey(e), taskID)
			if err != nil || got.Status != taskstore.StatusFailed {
				t.Fatalf("%s: the task %+v %v", tc.tool, got, err)
			}
		}
	}
}

// taskRows are the audit rows naming task id.
func taskRows(t *testing.T, client *dynamodb.Client, table, id string) []map[string]types.AttributeValue {
	t.Helper()
	out, err := client.Scan(t.Context(), &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		FilterExpression:          aws.String("taskId = :t"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":t": &types.AttributeValueMemberS{Value: id}}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Items
}

// aliceKey is alice's caller key: the owner of her tasks.
func aliceKey(e *env) string {
	return audit.Caller{AuthMethod: "jwt", Issuer: e.iss.URL, Tenant: "tenant-1", Subject: "alice"}.Key()
}

func waitFor(t *testing.T, ch chan string, want string) {
	t.Helper()
	select {
	case got := <-ch:
		if got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	case <-time.After(8 * time.Second):
		t.Fatalf("%q never came", want)
	}
}

// TestTasksConfig: MCPFN_TASKS_TABLE gives the gateway its task store and
// MCPFN_TASK_RUN_WINDOW the run window (default 40m); a task-required
// tool without a tasks table is refused at cold start.
func TestTasksConfig(t *testing.T) {
	t.Setenv("AWS_REGION", "us-east-1")
	base := map[string]string{EnvAuthMode: "none", EnvToolFunctions: "echo_call=f"}
	read := func(extra map[string]string) (Config, error) {
		return ConfigFrom(func(k string) string {
			if v, ok := extra[k]; ok {
				return v
			}
			return base[k]
		})
	}
	cfg, err := read(map[string]string{taskstore.EnvTable: "tasks-1", EnvTaskRunWindow: "25m"})
	if err != nil || cfg.Tasks == nil || cfg.Tasks.Table() != "tasks-1" || cfg.TaskRunWindow != 25*time.Minute {
		t.Fatalf("cfg tasks %v window %v: %v", cfg.Tasks, cfg.TaskRunWindow, err)
	}
	if _, err := read(map[string]string{EnvTaskRunWindow: "later"}); err == nil || !strings.Contains(err.Error(), EnvTaskRunWindow) {
		t.Fatalf("bad window: %v", err)
	}
	cfg, _ = read(nil)
	required := adapter.MustDefine(adapter.ToolDef[jobIn, facts]{Name: requiredTool, TaskSupport: adapter.TaskRequired, Handler: newJobs().handler})
	cfg.Tools, cfg.Functions = []*adapter.Tool{required}, map[string]string{requiredTool: "f"}
	if err := cfg.check(); err == nil || !strings.Contains(err.Error(), taskstore.EnvTable) {
		t.Fatalf("required tool without a table: %v", err)
	}
	cfg.Tasks = taskstore.New(nil, "t", taskstore.Options{})
	if err := cfg.check(); err != nil && strings.Contains(err.Error(), requiredTool) {
		t.Fatal(err)
	}
	if cfg.TaskRunWindow != defaultTaskRunWindow {
		t.Fatalf("default window %v", cfg.TaskRunWindow)
	}
}
