package gateway

import (
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/golang-jwt/jwt/v5"
)

// The review's H1 at the gateway: a task record is untrusted input. A
// record rewritten by anyone who can write the table (here the test's own
// credentials: no role, no key) is refused before the gateway acts on it —
// nothing is signed for another function, and no row is written for
// another tool — and a resume is authorized again as the caller's.

// set rewrites one attribute of a task record as any writer of the table
// can.
func (tb *tasksTable) set(t *testing.T, id, attr, value string) {
	t.Helper()
	_, err := tb.client.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{
		TableName: aws.String(tb.name), Key: map[string]types.AttributeValue{"taskId": &types.AttributeValueMemberS{Value: id}},
		UpdateExpression:          aws.String("SET #a = :v"),
		ExpressionAttributeNames:  map[string]string{"#a": attr},
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": &types.AttributeValueMemberS{Value: value}},
	})
	if err != nil {
		t.Fatal(err)
	}
}

// rowsOfTool are the audit rows naming tool.
func rowsOfTool(t *testing.T, client *dynamodb.Client, table, tool string) []map[string]types.AttributeValue {
	t.Helper()
	out, err := client.Scan(t.Context(), &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		FilterExpression:          aws.String("tool = :t"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":t": &types.AttributeValueMemberS{Value: tool}}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Items
}

// TestResumeOfARewrittenRecordIsRefused: alice's task waits for input;
// its record is rewritten to name another tool (thing_delete), its
// function and arguments of the writer's choosing. alice's tasks/update,
// which would resume it, is refused; thing_delete's function is never
// invoked (nothing was signed for it) and no row names thing_delete;
// tasks/get and tasks/cancel refuse the record too, and the operator's log
// says why.
func TestResumeOfARewrittenRecordIsRefused(t *testing.T) {
	aud, client, table := auditTable(t)
	var tb tasksTable
	logged := &logBuffer{}
	e := newEnv(t, withTasksIn(t, newJobs(), &tb, func(c *Config) { c.Recorder = aud; c.Logger = slog.New(slog.NewTextHandler(logged, nil)) }))
	tok := e.alice(t)
	v := e.createTask(t, tok, requiredTool, jobIn{EntityID: "h1", Ask: true})
	e.await(t, tok, v.TaskID, "input_required")
	tb.set(t, v.TaskID, "tool", "thing_delete")
	tb.set(t, v.TaskID, "function", "fn-secure")
	tb.set(t, v.TaskID, "params", `{"name":"thing_delete","arguments":{"entityId":"everything"}}`)
	runs := e.api.count("fn-" + requiredTool)

	a := e.rpc(t, tok, "tasks/update", map[string]any{"taskId": v.TaskID,
		"inputResponses": map[string]any{"ok": map[string]any{"action": "accept"}, "note": map[string]any{"action": "accept"}}}, true, nil)
	if a.Error == nil || a.Error.Code != -32603 || !strings.Contains(a.Error.Message, "changed outside the gateway") {
		t.Fatalf("tasks/update of a rewritten record: %s %+v", a.Result, a.Error)
	}
	for _, m := range []string{"tasks/get", "tasks/cancel"} {
		if a := e.rpc(t, tok, m, map[string]any{"taskId": v.TaskID}, true, nil); a.code() != -32603 {
			t.Errorf("%s of a rewritten record: %s %+v", m, a.Result, a.Error)
		}
	}
	e.api.async.Wait()
	if n := e.api.count("fn-secure"); n != 0 {
		t.Fatalf("thing_delete's function was invoked %d times", n)
	}
	if n := e.api.count("fn-" + requiredTool); n != runs {
		t.Fatalf("the task's own function was invoked again (%d → %d)", runs, n)
	}
	if rows := rowsOfTool(t, client, table, "thing_delete"); len(rows) != 0 {
		t.Fatalf("rows for thing_delete: %v", rows)
	}
	if !strings.Contains(logged.String(), "failed its integrity check") || !strings.Contains(logged.String(), v.TaskID) {
		t.Fatalf("the log does not name the refused record: %s", logged.String())
	}
}

// TestAbandonedRewrittenTaskWritesNoRowForAnotherTool: a task whose run
// never came is abandoned by tasks/get after its run window, with the
// gateway's row — but not once its record names another tool: then
// nothing is recorded, neither the task's end nor a row for that tool.
func TestAbandonedRewrittenTaskWritesNoRowForAnotherTool(t *testing.T) {
	aud, client, table := auditTable(t)
	var tb tasksTable
	e := newEnv(t, withTasksIn(t, newJobs(), &tb, func(c *Config) { c.Recorder = aud }))
	e.api.setMisbehave("fn-"+optionalTool, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusAccepted) })
	tok := e.alice(t)
	v := e.createTask(t, tok, optionalTool, jobIn{EntityID: "lost"})
	tb.set(t, v.TaskID, "tool", "thing_delete")
	var skew atomic.Int64
	e.gw.now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	skew.Store(int64(e.gw.cfg.TaskRunWindow + maxFunctionRun + time.Second))
	if a := e.rpc(t, tok, "tasks/get", map[string]any{"taskId": v.TaskID}, true, nil); a.code() != -32603 {
		t.Fatalf("tasks/get of a rewritten overdue task: %s %+v", a.Result, a.Error)
	}
	if rows := rowsOfTool(t, client, table, "thing_delete"); len(rows) != 0 {
		t.Fatalf("rows for thing_delete: %v", rows)
	}
	if rows := taskRows(t, client, table, v.TaskID); len(rows) != 0 {
		t.Fatalf("rows for the refused record: %v", rows)
	}
}

// TestResumeIsAuthorizedAgain: a tasks/update that would resume a task of
// a tool that requires scopes is refused (FORBIDDEN, naming the missing
// scope, with the gateway's row) when the caller no longer holds them;
// the task stays waiting, and the same caller with the scope resumes it.
func TestResumeIsAuthorizedAgain(t *testing.T) {
	aud, client, table := auditTable(t)
	e := newEnv(t, withTasks(t, newJobs(), func(c *Config) { c.Recorder = aud }))
	withScope := e.iss.token(t, "alice", func(c jwt.MapClaims) { c["scope"] = "jobs:run" })
	without := e.alice(t)
	v := e.createTask(t, withScope, securedTool, jobIn{EntityID: "s-1", Ask: true})
	e.await(t, withScope, v.TaskID, "input_required")
	runs := e.api.count("fn-" + securedTool)
	answers := map[string]any{"ok": map[string]any{"action": "accept"}, "note": map[string]any{"action": "accept"}}

	a := e.rpc(t, without, "tasks/update", map[string]any{"taskId": v.TaskID, "inputResponses": answers}, true, nil)
	if a.Error == nil || a.Error.Code != -32602 || !strings.Contains(string(a.Error.Data), `"FORBIDDEN"`) || !strings.Contains(string(a.Error.Data), "jobs:run") {
		t.Fatalf("tasks/update without the scope: %s %+v", a.Result, a.Error)
	}
	if g := e.getTask(t, without, v.TaskID); g.Status != "input_required" {
		t.Fatalf("after the refused update: %s", g.Status)
	}
	if n := e.api.count("fn-" + securedTool); n != runs {
		t.Fatalf("the refused update invoked the function")
	}
	rows := taskRows(t, client, table, v.TaskID)
	forbidden := 0
	for _, r := range rows {
		if attr(r, "stage") == StageGateway && attr(r, "errorCode") == "FORBIDDEN" && attr(r, "tool") == securedTool {
			forbidden++
		}
	}
	if forbidden != 1 {
		t.Fatalf("want one FORBIDDEN gateway row for the refused resume: %v", rows)
	}

	if a := e.rpc(t, withScope, "tasks/update", map[string]any{"taskId": v.TaskID, "inputResponses": answers}, true, nil); a.Error != nil {
		t.Fatalf("tasks/update with the scope: %+v", a.Error)
	}
	e.await(t, withScope, v.TaskID, "completed")
}

// TestTaskRecordsVerifyAcrossInstances: two gateways with the same secret
// (two Lambda instances) read each other's tasks; one with another key
// refuses them.
func TestTaskRecordsVerifyAcrossInstances(t *testing.T) {
	ks, err := recordKeysOf([][]byte{[]byte(strings.Repeat("s", 64))})
	if err != nil {
		t.Fatal(err)
	}
	again, _ := recordKeysOf([][]byte{[]byte(strings.Repeat("s", 64))})
	rotated, _ := recordKeysOf([][]byte{[]byte(strings.Repeat("n", 64)), []byte(strings.Repeat("s", 64))})
	other, _ := recordKeysOf([][]byte{[]byte(strings.Repeat("o", 64))})
	fixed := []byte("record")
	seal := ks.Seal(fixed)
	if !again.Verify(fixed, seal) || !rotated.Verify(fixed, seal) || other.Verify(fixed, seal) {
		t.Fatal("record keys do not derive alike from one secret")
	}
	if sk, _ := sessionKeysOf([][]byte{[]byte(strings.Repeat("s", 64))}); string(sk[0]) == string(ks[0]) {
		t.Fatal("the record key is the session key")
	}
	if _, err := recordKeysOf([][]byte{[]byte("short")}); err == nil {
		t.Fatal("a short secret made a record key")
	}
}

// logBuffer collects log lines, safely from any goroutine.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
