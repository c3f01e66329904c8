package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/internal/lambdatest"
	"github.com/mcpfn/mcpfn/taskstore"
)

// Long work is bounded (issue 20, M2): working tasks are capped per caller
// and in total, and the Event invokes of task runs count against the
// gateway's caps of Invokes in flight.

// refusedTask is the RATE_LIMITED an over-limit tools/call is answered
// with (an isError result, not a task).
func refusedTask(t *testing.T, a rpcAnswer) toolError {
	t.Helper()
	var res struct {
		IsError bool            `json:"isError"`
		TaskID  string          `json:"taskId"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(a.Result, &res); err != nil || !res.IsError || res.TaskID != "" {
		t.Fatalf("want a refused call, got %s %+v", a.Result, a.Error)
	}
	var cr struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	_ = json.Unmarshal(a.Result, &cr)
	var te toolError
	if len(cr.Content) != 1 || json.Unmarshal([]byte(cr.Content[0].Text), &te) != nil {
		t.Fatalf("not an error body: %s", a.Result)
	}
	return te
}

// TestWorkingTasksAreCappedPerCallerAndInTotal: with 2 tasks per caller
// and 3 in total, alice's third task and then bob's second are refused —
// RATE_LIMITED naming the limit, its value and a retry hint, with the
// gateway's row, no task, no invoke — and a cancelled task frees its slot.
func TestWorkingTasksAreCappedPerCallerAndInTotal(t *testing.T) {
	aud, client, table := auditTable(t)
	j := newJobs()
	e := newEnv(t, withTasks(t, j, func(c *Config) { c.Recorder = aud; c.MaxTasksPerCaller, c.MaxTasks = 2, 3 }))
	alice, bob := e.alice(t), e.iss.token(t, "bob", nil)
	var running []struct{ token, id string }
	start := func(tok, entity string) {
		t.Helper()
		v := e.createTask(t, tok, optionalTool, jobIn{EntityID: entity, Block: true})
		waitFor(t, j.started, entity)
		running = append(running, struct{ token, id string }{tok, v.TaskID})
	}
	t.Cleanup(func() {
		for _, r := range running {
			e.rpc(t, r.token, "tasks/cancel", map[string]any{"taskId": r.id}, true, nil)
		}
	})
	refused := func(tok, entity, variable string, max int) {
		t.Helper()
		invokes := e.api.count("fn-" + optionalTool)
		a := e.rpc(t, tok, "tools/call", map[string]any{"name": optionalTool, "arguments": jobIn{EntityID: entity}}, true, nil)
		te := refusedTask(t, a)
		d, _ := te.Details["retryAfterSeconds"].(float64)
		if te.Error != "RATE_LIMITED" || !te.Retryable || te.Details["limit"] != variable || te.Details["max"] != float64(max) ||
			d <= 0 || !strings.Contains(te.Message, variable) || !strings.Contains(te.Hint, "retry") {
			t.Fatalf("refusal %+v", te)
		}
		if n := e.api.count("fn-" + optionalTool); n != invokes {
			t.Fatal("a refused task was invoked")
		}
		rows := rowsOf(t, client, table, te.callID())
		if len(rows) != 1 || attr(rows[0], "stage") != StageGateway || attr(rows[0], "errorCode") != "RATE_LIMITED" ||
			attr(rows[0], "taskId") != "" || !strings.Contains(attr(rows[0], "errorMessage"), variable) {
			t.Fatalf("rows %v", rows)
		}
	}
	start(alice, "a-1")
	start(alice, "a-2")
	refused(alice, "a-3", EnvMaxTasksPerCaller, 2)
	start(bob, "b-1")
	refused(bob, "b-2", EnvMaxTasks, 3)
	// alice cancels a task: its slot is free at once.
	if a := e.rpc(t, alice, "tasks/cancel", map[string]any{"taskId": running[0].id}, true, nil); a.Error != nil {
		t.Fatal(a.Error)
	}
	waitFor(t, j.cancelled, "a-1")
	start(bob, "b-3")
}

// TestTaskRunsCountAsInvokes: a task's Event invoke takes a slot of the
// gateway's Invokes in flight like a synchronous one: with every slot
// taken it waits until its deadline and is refused (RATE_LIMITED), its
// task ends failed and its slot is freed — one message or a legacy batch's.
//
// The refused calls have an invocation's deadline of their own
// (postWithin): at most 300 ms of waiting for a slot, then the whole
// DeadlineReserve, 10 s here, to record the refusal and answer. The tasks
// that must run have the default invoke timeout. Before, one 300 ms
// InvokeTimeout served both, and on a busy machine the tasks table's
// admission of a task that must run took longer: it reached its Invoke
// past its deadline.
func TestTaskRunsCountAsInvokes(t *testing.T) {
	j := newJobs()
	e := newEnv(t, withTasks(t, j, func(c *Config) { c.MaxInvokes, c.MaxTasksPerCaller, c.DeadlineReserve = 1, 2, 10*time.Second }))
	within := e.postWithin(e.cfgUsed.DeadlineReserve + 300*time.Millisecond)
	tok := e.alice(t)
	e.gw.invokes <- struct{}{} // the one slot is taken
	te := refusedTask(t, e.rpcVia(t, within, tok, "tools/call", map[string]any{"name": optionalTool, "arguments": jobIn{EntityID: "x"}}, true, nil))
	if te.Error != "RATE_LIMITED" || !strings.Contains(te.Message, "in flight") {
		t.Fatalf("refusal %+v", te)
	}
	// Two more in a legacy batch: both refused the same way.
	var msgs []string
	for i := range 2 {
		msgs = append(msgs, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{"entityId":"b-%d"},"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{%q:{}}}}}}`,
			i+1, optionalTool, i, TasksExtension))
	}
	h := bearer(tok)
	h.Set("Mcp-Protocol-Version", "2025-03-26")
	resp, body := within(t, "["+strings.Join(msgs, ",")+"]", h)
	if resp.StatusCode != http.StatusOK || strings.Count(string(body), "RATE_LIMITED") != 2 || strings.Contains(string(body), `"taskId"`) {
		t.Fatalf("batch: %d %s", resp.StatusCode, body)
	}
	if n := e.api.count("fn-" + optionalTool); n != 0 {
		t.Fatalf("%d invokes past a full gateway", n)
	}
	<-e.gw.invokes
	// The refused tasks ended failed and gave their slots back: two
	// tasks (the caller's limit) run.
	for _, entity := range []string{"ok-1", "ok-2"} {
		v := e.createTask(t, tok, optionalTool, jobIn{EntityID: entity})
		e.await(t, tok, v.TaskID, string(taskstore.StatusCompleted))
	}
}

// TestTaskLimitsConfig: MCPFN_MAX_TASKS_PER_CALLER and MCPFN_MAX_TASKS set
// the caps (default 10 and 100); anything but a positive integer is
// refused at cold start.
func TestTaskLimitsConfig(t *testing.T) {
	t.Setenv("AWS_REGION", "us-east-1")
	read := func(extra map[string]string) (Config, error) {
		return ConfigFrom(func(k string) string { return extra[k] })
	}
	cfg, err := read(map[string]string{EnvMaxTasksPerCaller: "3", EnvMaxTasks: "40"})
	if err != nil || cfg.MaxTasksPerCaller != 3 || cfg.MaxTasks != 40 {
		t.Fatalf("%d %d %v", cfg.MaxTasksPerCaller, cfg.MaxTasks, err)
	}
	for _, v := range []string{"0", "-1", "many"} {
		if _, err := read(map[string]string{EnvMaxTasks: v}); err == nil || !strings.Contains(err.Error(), EnvMaxTasks) {
			t.Errorf("%s=%s: %v", EnvMaxTasks, v, err)
		}
	}
	cfg, _ = read(map[string]string{EnvAuthMode: "none"})
	cfg.Tools, cfg.Functions = testCatalog(t).tools(), testCatalog(t).functions()
	cfg.Signer = nil
	cfg.KeySecrets = map[string]string{"echo_call": "k"}
	_ = cfg.check()
	if cfg.MaxTasksPerCaller != defaultMaxTasksPer || cfg.MaxTasks != defaultMaxTasks {
		t.Fatalf("defaults %d %d", cfg.MaxTasksPerCaller, cfg.MaxTasks)
	}
}

// TestTasksOnLambdaNeedTheGatewaySecret: on Lambda, a gateway with a
// tasks table and no MCPFN_SESSION_KEY_SECRET does not start: its task
// records would verify only at the instance that sealed them.
func TestTasksOnLambdaNeedTheGatewaySecret(t *testing.T) {
	cat := testCatalog(t)
	cfg := Config{Tools: cat.tools(), Functions: cat.functions(), Auth: AuthNone,
		Signer: lambdatest.Signer(cat.functions()), Tasks: taskstore.New(nil, "t", taskstore.Options{}), Lambda: noInvoker{}}
	t.Setenv("AWS_LAMBDA_FUNCTION_NAME", "gateway")
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), EnvSessionKeySecret) {
		t.Fatalf("New: %v", err)
	}
	cfg.Tasks = nil
	g, err := New(cfg)
	if err != nil {
		t.Fatalf("without tasks: %v", err)
	}
	g.Close()
}
