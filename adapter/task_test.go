package adapter_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/calltoken"
	"github.com/mcpfn/mcpfn/internal/dynamolocal"
	"github.com/mcpfn/mcpfn/internal/lambdatest"
	"github.com/mcpfn/mcpfn/taskstore"
	"github.com/mcpfn/mcpfn/wire"
)

const taskOwner = "jwt:alice"

// taskStore is a store on a fresh TasksTable in DynamoDB Local, created
// from template.yaml.
func taskStore(t *testing.T, opts taskstore.Options) *taskstore.Store {
	t.Helper()
	st, _ := taskStores(t, opts)
	return st
}

// taskStores is taskStore and a function returning another store, with
// other options, on the same table.
func taskStores(t *testing.T, opts taskstore.Options) (*taskstore.Store, func(taskstore.Options) *taskstore.Store) {
	t.Helper()
	srv, table := dynamolocal.TemplateTableForTest(t, "TasksTable", "tasks")
	other := func(o taskstore.Options) *taskstore.Store { return taskstore.New(srv.Client(t.Context()), table, o) }
	return other(opts), other
}

// newTask creates alice's task for a call of tool, as the gateway does.
func newTask(t *testing.T, st *taskstore.Store, tool, callID string, args []byte) *taskstore.Task {
	t.Helper()
	task, err := st.Create(t.Context(), taskstore.NewTask{Owner: taskOwner, Tool: tool, Function: testFunction, CallID: callID,
		Params: mustJSON(t, map[string]any{"name": tool, "arguments": json.RawMessage(args)})})
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// taskEnvelope is the envelope a gateway sends (InvocationType Event) to run
// task: its call token names the task unless tokenTask says otherwise.
func taskEnvelope(t *testing.T, callID, tool string, args []byte, task string, tokenTask string) []byte {
	t.Helper()
	e := wire.Envelope{
		Version: wire.EnvelopeVersion, CallID: callID,
		Params: wire.EnvelopeParams{Name: tool, Arguments: args},
		MCP:    wire.EnvelopeMCP{Era: adapter.EraModern, Method: "tools/call", ProtocolVersion: "2026-07-28"},
		Task:   &wire.TaskRun{ID: task},
	}
	signTaskEnvelope(t, &e, tokenTask)
	return mustJSON(t, e)
}

// signTaskEnvelope sets e's call token as the gateway signs it: e's call id,
// tool, arguments and round, and tokenTask as its task.
func signTaskEnvelope(t *testing.T, e *wire.Envelope, tokenTask string) {
	t.Helper()
	tok, err := lambdatest.Signer(map[string]string{e.Params.Name: testFunction}).Sign(calltoken.Call{
		Tool: e.Params.Name, CallID: e.CallID, Args: e.Params.Arguments, Expires: time.Now().Add(time.Minute), Task: tokenTask,
		Caller:         &calltoken.Identity{Subject: "alice", AuthMethod: "jwt"},
		InputResponses: e.Params.InputResponses, RequestState: e.Params.RequestState,
	})
	if err != nil {
		t.Fatal(err)
	}
	e.CallToken = tok
}

func taskOptional[In, Out any](d *adapter.ToolDef[In, Out]) { d.TaskSupport = adapter.TaskOptional }

func getTask(t *testing.T, st *taskstore.Store, id string) *taskstore.Task {
	t.Helper()
	task, err := st.Get(t.Context(), taskOwner, id)
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// TestTaskRunRecordsItsOutcome: a task run claims its task, runs the call
// and records completed (a tool error result too), or failed with a
// JSON-RPC error for a panic; the audit row names the task.
func TestTaskRunRecordsItsOutcome(t *testing.T) {
	st := taskStore(t, taskstore.Options{})
	rows := &rows{}
	fn := newFunction(widgetTool(t, taskOptional), adapter.WithTaskStore(st), adapter.WithAuditor(rows), quietLogger())
	for _, tc := range []struct {
		fail   string
		status taskstore.Status
		check  func(t *testing.T, task *taskstore.Task)
	}{
		{"", taskstore.StatusCompleted, func(t *testing.T, task *taskstore.Task) {
			if !strings.Contains(string(task.Result), `"structuredContent":{"entityId":"w-"`) || strings.Contains(string(task.Result), "isError") {
				t.Fatalf("result %s", task.Result)
			}
		}},
		{"app", taskstore.StatusCompleted, func(t *testing.T, task *taskstore.Task) {
			if !strings.Contains(string(task.Result), `"isError":true`) || !strings.Contains(string(task.Result), "CONFLICT") {
				t.Fatalf("result %s", task.Result)
			}
		}},
		{"panic", taskstore.StatusFailed, func(t *testing.T, task *taskstore.Task) {
			if task.Error == nil || task.Error.Code != wire.RPCInternalError || len(task.Result) != 0 || strings.Contains(task.Error.Message, "exploded") {
				t.Fatalf("error %+v result %s", task.Error, task.Result)
			}
		}},
	} {
		t.Run("fail="+tc.fail, func(t *testing.T) {
			args := mustJSON(t, widgetIn{EntityID: "w-", Fail: tc.fail})
			callID := "c-task-" + tc.fail
			task := newTask(t, st, "widget_update", callID, args)
			invoke(t, fn, taskEnvelope(t, callID, "widget_update", args, task.ID, task.ID), lambdaInvoke{RequestID: "run-" + tc.fail})
			got := getTask(t, st, task.ID)
			if got.Status != tc.status || got.RunID != "run-"+tc.fail || got.Attempts != 1 {
				t.Fatalf("task %s, run %q, attempts %d; want %s", got.Status, got.RunID, got.Attempts, tc.status)
			}
			tc.check(t, got)
			if row := rows.last(t); row.TaskID != task.ID || row.Dimensions["mcpfn.taskStatus"] != string(tc.status) {
				t.Fatalf("audit row task %q, dimensions %v", row.TaskID, row.Dimensions)
			}
		})
	}
}

// TestTaskRunAsksForInput: RequireInput ends the round input_required, with
// the requests and the sealed state in the task (never in the clear).
func TestTaskRunAsksForInput(t *testing.T) {
	st := taskStore(t, taskstore.Options{})
	tool := adapter.MustDefine(adapter.ToolDef[struct {
		File string `json:"file"`
	}, widgetOut]{
		Name: "file_delete", TaskSupport: adapter.TaskRequired,
		Handler: func(_ context.Context, call *adapter.Call, in struct {
			File string `json:"file"`
		}) (widgetOut, error) {
			return widgetOut{}, adapter.RequireInput(map[string]adapter.InputRequest{
				"confirm": {Method: "elicitation/create", Params: map[string]any{"message": "Delete " + in.File + "?"}},
			}, "secret-state-"+in.File)
		},
	})
	fn := newFunction(tool, adapter.WithTaskStore(st), quietLogger())
	args := []byte(`{"file":"a.txt"}`)
	task := newTask(t, st, "file_delete", "c-input", args)
	invoke(t, fn, taskEnvelope(t, "c-input", "file_delete", args, task.ID, task.ID), lambdaInvoke{RequestID: "run-input"})
	got := getTask(t, st, task.ID)
	if got.Status != taskstore.StatusInputRequired || !strings.Contains(string(got.InputRequests["confirm"]), `"method":"elicitation/create"`) {
		t.Fatalf("task %s, requests %v", got.Status, got.InputRequests)
	}
	if len(got.RequestState) == 0 || strings.Contains(string(got.RequestState), "secret-state") {
		t.Fatalf("request state %q: want it sealed", got.RequestState)
	}
}

// TestTaskTokenMustNameTheTask: an attacker holding a synchronous call's
// token (or another task's) cannot make the function run, claim or finish
// a task: UNAUTHORIZED, and the task is untouched.
func TestTaskTokenMustNameTheTask(t *testing.T) {
	st := taskStore(t, taskstore.Options{})
	rec := newRecorder()
	fn := newFunction(widgetTool(t, taskOptional), adapter.WithTaskStore(st), adapter.WithHooks(rec.hooks()), quietLogger())
	args := mustJSON(t, widgetIn{EntityID: "w-1"})
	task := newTask(t, st, "widget_update", "c-forged", args)
	other := newTask(t, st, "widget_update", "c-forged", args)
	for name, tokenTask := range map[string]string{"sync token": "", "another task's token": other.ID} {
		res, rpcErr := envelopeResult(t, invoke(t, fn, taskEnvelope(t, "c-forged", "widget_update", args, task.ID, tokenTask), lambdaInvoke{}))
		if rpcErr != nil || res.errorBody(t).Error != "UNAUTHORIZED" {
			t.Fatalf("%s: %+v %v", name, res, rpcErr)
		}
	}
	if got := getTask(t, st, task.ID); got.Status != taskstore.StatusWorking || got.RunID != "" || got.Attempts != 0 {
		t.Fatalf("the task was touched: %s run %q attempts %d", got.Status, got.RunID, got.Attempts)
	}
	// And a task's token does not answer synchronously.
	env := taskEnvelope(t, "c-forged", "widget_update", args, task.ID, task.ID)
	var e wire.Envelope
	_ = json.Unmarshal(env, &e)
	e.Task = nil
	if res, _ := envelopeResult(t, invoke(t, fn, mustJSON(t, e), lambdaInvoke{})); res.errorBody(t).Error != "UNAUTHORIZED" {
		t.Fatalf("a task token ran synchronously: %+v", res)
	}
}

// TestTaskResultAboveTheItemLimitFails: a result the task item cannot hold
// ends the task failed with an error naming the limit.
func TestTaskResultAboveTheItemLimitFails(t *testing.T) {
	st, other := taskStores(t, taskstore.Options{})
	fn := newFunction(widgetTool(t, taskOptional), adapter.WithTaskStore(other(taskstore.Options{MaxPayloadBytes: 300})), quietLogger())
	args := mustJSON(t, widgetIn{EntityID: strings.Repeat("w", 200)})
	task := newTask(t, st, "widget_update", "c-big", args)
	invoke(t, fn, taskEnvelope(t, "c-big", "widget_update", args, task.ID, task.ID), lambdaInvoke{RequestID: "run-big"})
	got := getTask(t, st, task.ID)
	if got.Status != taskstore.StatusFailed || got.Error == nil || !strings.Contains(got.Error.Message, "limit") {
		t.Fatalf("task %s, error %+v", got.Status, got.Error)
	}
}

// TestDestructiveTaskRetryIsNotRerun: Lambda retries an async invocation
// whose first run died after its write-ahead row; the retry (same request
// id, so the same claim) finds the row, does not run the handler, and the
// task ends failed: interrupted, not re-run.
func TestDestructiveTaskRetryIsNotRerun(t *testing.T) {
	st := taskStore(t, taskstore.Options{})
	rows := &rows{}
	ran := false
	fn := newFunction(widgetTool(t, taskOptional, func(d *adapter.ToolDef[widgetIn, widgetOut]) {
		d.Destructive, d.Idempotent = true, false
		h := d.Handler
		d.Handler = func(ctx context.Context, c *adapter.Call, in widgetIn) (widgetOut, error) {
			ran = true
			return h(ctx, c, in)
		}
	}), adapter.WithTaskStore(st), adapter.WithAuditor(rows), quietLogger())
	args := mustJSON(t, widgetIn{EntityID: "w-9"})
	task := newTask(t, st, "widget_update", "c-retry", args)
	// The first attempt claimed the task and wrote its pending row, then died.
	if _, err := st.Claim(t.Context(), task.ID, "run-retry"); err != nil {
		t.Fatal(err)
	}
	_, _ = rows.Pending(t.Context(), &audit.Row{CallID: "c-retry", Status: audit.StatusPending, StartedAt: time.Now()})

	invoke(t, fn, taskEnvelope(t, "c-retry", "widget_update", args, task.ID, task.ID), lambdaInvoke{RequestID: "run-retry"})
	got := getTask(t, st, task.ID)
	if ran || got.Status != taskstore.StatusFailed || got.Attempts != 2 || !strings.Contains(got.Error.Message, "interrupted; not re-run") {
		t.Fatalf("ran %v; task %s attempts %d error %+v", ran, got.Status, got.Attempts, got.Error)
	}
}

// TestTaskForbiddenToolFailsTheTask: a task envelope for a tool that does
// not run as a task (the default) fails the task instead of running it.
func TestTaskForbiddenToolFailsTheTask(t *testing.T) {
	st := taskStore(t, taskstore.Options{})
	fn := newFunction(widgetTool(t), adapter.WithTaskStore(st), quietLogger())
	args := mustJSON(t, widgetIn{EntityID: "w-1"})
	task := newTask(t, st, "widget_update", "c-forbidden", args)
	invoke(t, fn, taskEnvelope(t, "c-forbidden", "widget_update", args, task.ID, task.ID), lambdaInvoke{RequestID: "run-forbidden"})
	if got := getTask(t, st, task.ID); got.Status != taskstore.StatusFailed || got.Error.Code != wire.RPCInvalidParams {
		t.Fatalf("task %s error %+v", got.Status, got.Error)
	}
}

// TestTaskCancelStopsTheHandler: tasks/cancel while the handler runs
// cancels its context within a watch interval; the task stays cancelled,
// the audit row says cancelled. Progress became the task's statusMessage.
func TestTaskCancelStopsTheHandler(t *testing.T) {
	st := taskStore(t, taskstore.Options{})
	rows := &rows{}
	gate := make(chan struct{})
	fn := newFunction(pagesTool(t, gate, taskOptional), adapter.WithTaskStore(st), adapter.WithAuditor(rows),
		adapter.WithTaskWatchInterval(20*time.Millisecond), quietLogger())
	args := mustJSON(t, pagesIn{Pages: 1, WaitCtx: true})
	task := newTask(t, st, "pages_digest", "c-cancel", args)
	done := make(chan []byte)
	go func() {
		done <- invoke(t, fn, taskEnvelope(t, "c-cancel", "pages_digest", args, task.ID, task.ID), lambdaInvoke{RequestID: "run-cancel"})
	}()
	gate <- struct{}{} // the handler has reported page 0 and runs on
	if got := getTask(t, st, task.ID); got.StatusMessage != "0/1: page 0" {
		t.Fatalf("statusMessage %q", got.StatusMessage)
	}
	if err := st.Cancel(t.Context(), taskOwner, task.ID); err != nil {
		t.Fatal(err)
	}
	res, _ := envelopeResult(t, <-done)
	if res.errorBody(t).Error != "CANCELLED" {
		t.Fatalf("result %+v", res)
	}
	if got := getTask(t, st, task.ID); got.Status != taskstore.StatusCancelled {
		t.Fatalf("task %s", got.Status)
	}
	if row := rows.last(t); !row.Cancelled || row.ErrorCode != "CANCELLED" || row.TaskID != task.ID {
		t.Fatalf("row cancelled %v code %s task %q", row.Cancelled, row.ErrorCode, row.TaskID)
	}
}

// TestSyncCallCancelledByItsMarker: notifications/cancelled for a
// synchronous call (the gateway's cancel marker) cancels the handler's
// context; the row says cancelled. A marker for another request does not.
// An unverified caller's marker (no owner; the gateway keys it by call id)
// is watched too.
func TestSyncCallCancelledByItsMarker(t *testing.T) {
	for _, owner := range []string{taskOwner, ""} {
		st := taskStore(t, taskstore.Options{})
		rows := &rows{}
		gate := make(chan struct{})
		fn := newFunction(pagesTool(t, gate), adapter.WithTaskStore(st), adapter.WithAuditor(rows),
			adapter.WithTaskWatchInterval(20*time.Millisecond), quietLogger())
		var e wire.Envelope
		_ = json.Unmarshal(pagesEnvelope(t, "c-sync-cancel", pagesIn{Pages: 1, WaitCtx: true}, nil), &e)
		e.Cancel = &wire.CancelMarker{Owner: owner, Request: "7"}
		done := make(chan []byte)
		go func() { done <- invoke(t, fn, mustJSON(t, e), lambdaInvoke{RequestID: "run-sync-cancel"}) }()
		gate <- struct{}{}
		if err := st.MarkCancelled(t.Context(), owner, "8"); err != nil {
			t.Fatal(err)
		}
		if err := st.MarkCancelled(t.Context(), owner, "7"); err != nil {
			t.Fatal(err)
		}
		res, _ := envelopeResult(t, <-done)
		if res.errorBody(t).Error != "CANCELLED" {
			t.Fatalf("owner %q: result %+v", owner, res)
		}
		if row := rows.last(t); !row.Cancelled || row.TaskID != "" {
			t.Fatalf("owner %q: row cancelled %v task %q", owner, row.Cancelled, row.TaskID)
		}
	}
}

// TestTaskSupportIsDeclared: the default is forbidden; anything but the
// three values is refused at definition.
func TestTaskSupportIsDeclared(t *testing.T) {
	if got := widgetTool(t).TaskSupport(); got != adapter.TaskForbidden {
		t.Fatalf("default %q", got)
	}
	if got := widgetTool(t, taskOptional).TaskSupport(); got != adapter.TaskOptional {
		t.Fatalf("optional %q", got)
	}
	d := widgetDef()
	d.TaskSupport = "sometimes"
	if _, err := adapter.Define(d); err == nil {
		t.Fatal("TaskSupport \"sometimes\" accepted")
	}
}

type greetTaskIn struct {
	Greeting string `json:"greeting"`
}

// greetTool is the conformance suite's test_tool_with_task shape: round 1
// asks for the user's name synchronously; round 2, with the answer, asks
// to run as a task; the task run greets.
func greetTool(t *testing.T) *adapter.Tool {
	t.Helper()
	return adapter.MustDefine(adapter.ToolDef[greetTaskIn, widgetOut]{
		Name: "greet_task", TaskSupport: adapter.TaskRequired,
		Handler: func(_ context.Context, call *adapter.Call, in greetTaskIn) (widgetOut, error) {
			answer, ok := call.InputResponses()["user_name"]
			switch {
			case !ok:
				return widgetOut{}, adapter.RequireInput(map[string]adapter.InputRequest{
					"user_name": {Method: "elicitation/create", Params: map[string]any{"message": "Your name?"}},
				}, "round-2")
			case call.TaskID() == "":
				return widgetOut{}, adapter.StartTask()
			}
			var a struct {
				Content struct {
					Name string `json:"name"`
				} `json:"content"`
			}
			_ = json.Unmarshal(answer, &a)
			return widgetOut{EntityID: in.Greeting + ", " + a.Content.Name}, nil
		},
	})
}

// TestStartTaskAfterASynchronousRound: a synchronous round whose handler
// returns StartTask answers startTask (no result); the gateway then runs
// the same round, answers and sealed state included, as a task.
func TestStartTaskAfterASynchronousRound(t *testing.T) {
	st := taskStore(t, taskstore.Options{})
	fn := newFunction(greetTool(t), adapter.WithTaskStore(st), quietLogger())
	args := []byte(`{"greeting":"Hello"}`)
	var round1 wire.EnvelopeResponse
	if err := json.Unmarshal(invoke(t, fn, taskEnvelope(t, "c-greet", "greet_task", args, "", ""), lambdaInvoke{}), &round1); err != nil {
		t.Fatal(err)
	}
	var ir struct {
		ResultType   string `json:"resultType"`
		RequestState string `json:"requestState"`
	}
	if err := json.Unmarshal(round1.Result, &ir); err != nil || ir.ResultType != "input_required" {
		t.Fatalf("round 1: %s", round1.Result)
	}
	round2 := func(task string) []byte {
		var e wire.Envelope
		_ = json.Unmarshal(taskEnvelope(t, "c-greet", "greet_task", args, task, task), &e)
		if task == "" {
			e.Task = nil
		}
		e.Params.InputResponses = json.RawMessage(`{"user_name":{"action":"accept","content":{"name":"Alice"}}}`)
		e.Params.RequestState = ir.RequestState
		signTaskEnvelope(t, &e, task)
		return mustJSON(t, e)
	}
	var sync2 wire.EnvelopeResponse
	raw := invoke(t, fn, round2(""), lambdaInvoke{})
	if err := json.Unmarshal(raw, &sync2); err != nil || !sync2.StartTask || sync2.Result != nil || sync2.Error != nil {
		t.Fatalf("round 2, synchronous: %s", raw)
	}
	task := newTask(t, st, "greet_task", "c-greet", args)
	invoke(t, fn, round2(task.ID), lambdaInvoke{RequestID: "run-greet"})
	if got := getTask(t, st, task.ID); got.Status != taskstore.StatusCompleted || !strings.Contains(string(got.Result), "Hello, Alice") {
		t.Fatalf("task %s result %s error %+v", got.Status, got.Result, got.Error)
	}
}

// TestCancelledDestructiveCallIsOutcomeUnknown: a destructive handler
// cancelled while it ran may have taken effect: the answer says so and is
// not retryable, and the row's outcome is unknown, as for a timeout.
func TestCancelledDestructiveCallIsOutcomeUnknown(t *testing.T) {
	st := taskStore(t, taskstore.Options{})
	rows := &rows{}
	gate := make(chan struct{})
	fn := newFunction(pagesTool(t, gate, func(d *adapter.ToolDef[pagesIn, pagesOut]) { d.Destructive = true }),
		adapter.WithTaskStore(st), adapter.WithAuditor(rows), adapter.WithTaskWatchInterval(20*time.Millisecond), quietLogger())
	var e wire.Envelope
	_ = json.Unmarshal(pagesEnvelope(t, "c-del-cancel", pagesIn{Pages: 1, WaitCtx: true}, nil), &e)
	e.Cancel = &wire.CancelMarker{Owner: taskOwner, Request: "9"}
	done := make(chan []byte)
	go func() { done <- invoke(t, fn, mustJSON(t, e), lambdaInvoke{RequestID: "run-del-cancel"}) }()
	gate <- struct{}{}
	if err := st.MarkCancelled(t.Context(), taskOwner, "9"); err != nil {
		t.Fatal(err)
	}
	res, _ := envelopeResult(t, <-done)
	if b := res.errorBody(t); b.Error != "CANCELLED" || b.Retryable || !strings.Contains(b.Message, "outcome is unknown") {
		t.Fatalf("answer %+v", b)
	}
	if row := rows.last(t); !row.Cancelled || row.Outcome != audit.OutcomeUnknown {
		t.Fatalf("row cancelled %v outcome %q", row.Cancelled, row.Outcome)
	}
}
