package localtest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mcpfn/mcpfn/gateway"
	"github.com/mcpfn/mcpfn/localtest/conformance"
	"github.com/mcpfn/mcpfn/taskstore"
)

// Issue 20's task findings, end to end through the stack, whose IAM is
// template.yaml's (decision 0032): H1 (a task record rewritten to run
// another tool as its owner), L1 (a planted cancel marker) and M2 (one
// caller's burst of task starts).

func attrS(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func taskKey(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{taskstore.KeyAttribute: attrS(id)}
}

// as is a DynamoDB client with function's role session.
func as(t *testing.T, function string) *dynamodb.Client {
	t.Helper()
	c, ok := stack.FunctionCredentials(function)
	if !ok {
		t.Fatalf("no credentials for %s", function)
	}
	return stack.DynamoDBAs(c)
}

// set is an UpdateItem that sets attributes (name → string value) of key.
func set(table, key string, attrs map[string]string) *dynamodb.UpdateItemInput {
	in := &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: taskKey(key),
		ExpressionAttributeNames: map[string]string{}, ExpressionAttributeValues: map[string]types.AttributeValue{}}
	var sets []string
	i := 0
	for name, v := range attrs {
		n, val := fmt.Sprintf("#a%d", i), fmt.Sprintf(":v%d", i)
		in.ExpressionAttributeNames[n], in.ExpressionAttributeValues[val] = name, attrS(v)
		sets = append(sets, n+" = "+val)
		i++
	}
	in.UpdateExpression = aws.String("SET " + strings.Join(sets, ", "))
	return in
}

// TestARewrittenTaskIsNeverResumedForAnotherTool is the review's H1: alice's
// task (multi_input) waits for her input. A compromised function — the
// demo's task tool, a fixture task tool, a tool without tasks, even the
// task's own tool — tries to make it name another tool (broadcast_delete),
// that tool's function and arguments of its choosing: IAM refuses each.
// Then the record is rewritten by other means (the operator's credentials,
// outside any role): alice's tasks/update, which would resume the task, is
// refused; nothing is invoked — no token was signed for broadcast_delete's
// function, and the task's own function does not run again either — and no
// audit row names broadcast_delete or the gateway for that task.
func TestARewrittenTaskIsNeverResumedForAnotherTool(t *testing.T) {
	alice := newRPCClient(t, unique("h1-owner"))
	id := alice.startTask(t, conformance.ToolMultiInput, map[string]any{})
	alice.pollUntil(t, id, 30*time.Second, "input_required")
	if !strings.HasPrefix(id, conformance.ToolMultiInput+".") {
		t.Fatalf("task id %q is not under its tool's prefix", id)
	}
	table := stack.Table("TasksTable")
	rewrite := set(table, id, map[string]string{"tool": "broadcast_delete", "function": "BroadcastDeleteFunction",
		"params": `{"name":"broadcast_delete","arguments":{"id":"everything"}}`})
	for _, fn := range []string{"BroadcastDigestFunction", taskCrashFunction, attacker, taskInputFunction} {
		_, err := as(t, fn).UpdateItem(t.Context(), rewrite)
		wantAccessDenied(t, fn+" rewriting the task's tool, function and arguments", err, "dynamodb:UpdateItem")
	}

	if _, err := stack.DynamoDB().UpdateItem(t.Context(), rewrite); err != nil {
		t.Fatalf("the operator's rewrite: %v", err)
	}
	deletes, runs := stack.Invocations("BroadcastDeleteFunction"), stack.Invocations(taskInputFunction)
	answers := map[string]any{
		"first_name": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}},
		"last_name":  map[string]any{"action": "accept", "content": map[string]any{"name": "Lovelace"}},
	}
	res, rerr := alice.call(t, "tasks/update", id, map[string]any{"taskId": id, "inputResponses": answers})
	if rerr == nil || rerr.Code != -32603 || !strings.Contains(rerr.Message, "changed outside the gateway") {
		t.Fatalf("tasks/update of the rewritten task: %v %v", res, rerr)
	}
	if res, rerr := alice.call(t, "tasks/get", id, map[string]any{"taskId": id}); rerr == nil || rerr.Code != -32603 {
		t.Fatalf("tasks/get of the rewritten task: %v %v", res, rerr)
	}
	if err := stack.Settle(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := stack.Invocations("BroadcastDeleteFunction"); n != deletes {
		t.Fatalf("broadcast_delete's function was invoked %d times after the rewrite", n-deletes)
	}
	if n := stack.Invocations(taskInputFunction); n != runs {
		t.Fatalf("the task's function ran again after the rewrite (%d → %d)", runs, n)
	}
	for _, r := range taskRows(t, id) {
		if r.Tool != conformance.ToolMultiInput || r.Writer == "gateway" {
			t.Errorf("a row for the rewritten task: %+v", r)
		}
	}
}

// TestACompromisedFunctionCannotPlantACancelMarker (L1): a cancel marker
// stops any caller's synchronous call that watches its key, so only the
// gateway may write one. Every tool role — with tasks or without — is
// refused writing "cancel#…" (UpdateItem, which would create it, and
// PutItem) and the gateway's slots; each still reads markers, as its
// calls' cancel watch does.
func TestACompromisedFunctionCannotPlantACancelMarker(t *testing.T) {
	table := stack.Table("TasksTable")
	marker := "cancel#" + unique("planted")
	future := fmt.Sprint(time.Now().Add(time.Hour).UnixMilli())
	for _, fn := range []string{attacker, "BroadcastDigestFunction", taskCrashFunction} {
		ddb := as(t, fn)
		_, err := ddb.UpdateItem(t.Context(), set(table, marker, map[string]string{"markedAt": future}))
		wantAccessDenied(t, fn+" UpdateItem of a marker", err, "dynamodb:UpdateItem")
		_, err = ddb.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
			taskstore.KeyAttribute: attrS(marker), "markedAt": &types.AttributeValueMemberN{Value: future},
			taskstore.TTLAttribute: &types.AttributeValueMemberN{Value: fmt.Sprint(time.Now().Add(time.Hour).Unix())}}})
		wantAccessDenied(t, fn+" PutItem of a marker", err, "dynamodb:PutItem")
		for _, slots := range []string{"gateway#slots#all", "gateway#slots#owner#x"} {
			_, err = ddb.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: taskKey(slots),
				UpdateExpression: aws.String("REMOVE #held"), ExpressionAttributeNames: map[string]string{"#held": "held"}})
			wantAccessDenied(t, fn+" freeing the gateway's slots", err, "dynamodb:UpdateItem")
		}
		if _, err := ddb.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(table), Key: taskKey(marker), ConsistentRead: aws.Bool(true)}); err != nil {
			t.Fatalf("%s reading a marker: %v", fn, err)
		}
	}
}

// TestATaskFunctionWritesOnlyItsOwnTasksRunAttributes: a task tool's role
// writes a run's attributes (status, outcome, claim) on its own tasks'
// keys only; the attributes the gateway seals (owner, tool, arguments,
// seal) it may not write even there, and another task tool's task not at
// all. (What it can write on its own tasks the gateway never trusts for
// more than that task's own outcome.)
func TestATaskFunctionWritesOnlyItsOwnTasksRunAttributes(t *testing.T) {
	table := stack.Table("TasksTable")
	ddb := as(t, taskCrashFunction)
	own := taskstore.NewID(conformance.ToolCrashJob)
	t.Cleanup(func() {
		_, _ = stack.DynamoDB().DeleteItem(t.Context(), &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: taskKey(own)})
	})
	if _, err := ddb.UpdateItem(t.Context(), set(table, own, map[string]string{"status": "completed", "statusMessage": "done"})); err != nil {
		t.Fatalf("its own task's run attributes: %v", err)
	}
	for _, attr := range []string{"owner", "tool", "function", "callId", "params", "answered"} {
		_, err := ddb.UpdateItem(t.Context(), set(table, own, map[string]string{attr: "forged"}))
		wantAccessDenied(t, "its own task's "+attr, err, "dynamodb:UpdateItem")
	}
	_, err := ddb.UpdateItem(t.Context(), set(table, taskstore.NewID(conformance.ToolSlowCompute), map[string]string{"status": "completed"}))
	wantAccessDenied(t, "another task tool's task", err, "dynamodb:UpdateItem")
	_, err = ddb.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(table), Key: taskKey(taskstore.NewID(conformance.ToolSlowCompute))})
	wantAccessDenied(t, "reading another tool's task", err, "dynamodb:GetItem")
}

// TestTwoHundredConcurrentTaskStartsRunAtMostTheCap (M2): one caller
// starts 200 tasks at once. At most the per-caller cap (10 by default) are
// created and run; every other start is refused with RATE_LIMITED naming
// the limit and its variable, with a retry hint, and leaves the gateway's
// audit row.
func TestTwoHundredConcurrentTaskStartsRunAtMostTheCap(t *testing.T) {
	const n, limit = 200, 10
	caller := newRPCClient(t, unique("burst"))
	label := unique("burst")
	before := stack.Invocations(taskSlowFunction)
	type answer struct {
		res  map[string]any
		rerr *rpcError
		err  error
	}
	answers := make([]answer, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			a := &answers[i]
			a.res, a.rerr, a.err = rpcPost(t.Context(), caller.token, i+1, "tools/call", conformance.ToolSlowCompute,
				map[string]any{"name": conformance.ToolSlowCompute, "arguments": map[string]any{"seconds": 60, "label": label}})
		})
	}
	wg.Wait()
	var started []string
	var refusedCalls []string
	for i, a := range answers {
		switch {
		case a.err != nil || a.rerr != nil:
			t.Fatalf("start %d: %v %v", i, a.err, a.rerr)
		case a.res["resultType"] == "task":
			started = append(started, a.res["taskId"].(string))
		default:
			body := toolErrorBody(t, a.res)
			if body.Error != "RATE_LIMITED" || !body.Retryable || body.Details["limit"] != gateway.EnvMaxTasksPerCaller ||
				body.Details["max"] != float64(limit) || !strings.Contains(body.Message, gateway.EnvMaxTasksPerCaller) || !strings.Contains(body.Hint, "retry") {
				t.Fatalf("start %d refused with %+v", i, body)
			}
			refusedCalls = append(refusedCalls, body.Details["callId"].(string))
		}
	}
	cancelAll := func(ctx context.Context) {
		for i, id := range started {
			_, _, _ = rpcPost(ctx, caller.token, n+i+1, "tasks/cancel", id, map[string]any{"taskId": id})
		}
	}
	t.Cleanup(func() { cancelAll(context.Background()) }) // a failed check leaves no 60 s runs behind
	if len(started) != limit || len(refusedCalls) != n-limit {
		t.Fatalf("%d started, %d refused; want %d and %d", len(started), len(refusedCalls), limit, n-limit)
	}
	// Every refusal has the gateway's row.
	for _, callID := range refusedCalls {
		out, err := stack.DynamoDB().GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(stack.AuditTable()),
			Key: map[string]types.AttributeValue{"rowKey": attrS("gateway#" + callID)}, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		code, _ := out.Item["errorCode"].(*types.AttributeValueMemberS)
		if code == nil || code.Value != "RATE_LIMITED" {
			t.Fatalf("refused call %s: row %v", callID, out.Item)
		}
	}
	// At most the cap ran: nothing else was invoked.
	cancelAll(t.Context())
	if err := stack.Settle(t.Context()); err != nil {
		t.Fatal(err)
	}
	if ran := stack.Invocations(taskSlowFunction) - before; ran > limit {
		t.Fatalf("%d runs of slow_compute for %d tasks", ran, limit)
	}
}

// limitBody is the adapter's error body of an isError result.
type limitBody struct {
	Error     string         `json:"error"`
	Message   string         `json:"message"`
	Retryable bool           `json:"retryable"`
	Hint      string         `json:"hint"`
	Details   map[string]any `json:"details"`
}

func toolErrorBody(t *testing.T, res map[string]any) limitBody {
	t.Helper()
	var r struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	b, _ := json.Marshal(res)
	var body limitBody
	if json.Unmarshal(b, &r) != nil || !r.IsError || len(r.Content) != 1 || json.Unmarshal([]byte(r.Content[0].Text), &body) != nil {
		t.Fatalf("not an error result: %s", b)
	}
	return body
}
