package audit_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/internal/lambdatest"
	"github.com/mcpfn/mcpfn/internal/testseam"
)

// lateSignal is the auditor, with a signal once a late outcome has been
// handed to it and written.
type lateSignal struct {
	*audit.Auditor
	written chan struct{}
}

func (l lateSignal) Late(ctx context.Context, row *audit.Row) {
	l.Auditor.Late(ctx, row)
	close(l.written)
}

// deadlineAt makes a call's deadline come at an event: the call's context
// ends, as at its deadline, once event is closed (or at the deadline the
// adapter gave it, if that comes first). The invocation's own context, which
// bounds the audit's writes, is left as it is.
func deadlineAt(event <-chan struct{}) testseam.CallDeadlineFunc {
	return func(ctx context.Context, deadline time.Time) (context.Context, context.CancelFunc) {
		ctx, cancel := context.WithDeadline(ctx, deadline)
		ctx, end := context.WithCancelCause(ctx)
		go func() {
			select {
			case <-event:
				end(context.DeadlineExceeded)
			case <-ctx.Done():
			}
		}()
		return ctx, func() { end(context.Canceled); cancel() }
	}
}

// TestAdapterDestructiveTimeoutIsOutcomeUnknownThenLate: a destructive
// handler that outlives its deadline is answered TIMEOUT, not retryable,
// "may have taken effect"; its row (the pending row, completed) says stage
// handler, TIMEOUT, outcome unknown, never a plain failure; and when the
// handler finishes later in the same process, the row records that.
//
// The deadline comes once the handler has started (testseam): the
// write-ahead row before it is a real DynamoDB Local round trip, which took
// over 3 s on a machine at load 20, and a deadline at a fixed time then fell
// before the handler (a retryable TIMEOUT: right, but not this test's
// stage). The call's own deadline arithmetic (the reserve) is
// TestAdapterHangingHookLeavesItsFinalRow's.
func TestAdapterDestructiveTimeoutIsOutcomeUnknownThenLate(t *testing.T) {
	e := newEnv(t)
	release, started := make(chan struct{}), make(chan struct{})
	var runs atomic.Int32
	tool := adapter.MustDefine(adapter.ToolDef[pathIn, deleteOut]{
		Name:        "broadcast_delete",
		Destructive: true,
		Handler: func(_ context.Context, _ *adapter.Call, in pathIn) (deleteOut, error) {
			if runs.Add(1) == 1 {
				close(started)
			}
			<-release // a client library that ignores the context
			return deleteOut{Deleted: in.ID}, nil
		},
	})
	rec := lateSignal{e.auditor(t, audit.Config{}), make(chan struct{})}
	fn := newFunction(tool, adapter.WithAuditor(rec), adapter.WithReserve(700*time.Millisecond), quietAdapter())
	ctx, cancel := lambdatest.Context(context.Background(), lambdatest.Invocation{
		RequestID:   "req-slow",
		FunctionARN: "arn:aws:lambda:us-east-1:123456789012:function:broadcast_delete",
		Timeout:     5 * time.Minute, // bounds the rows' writes; the call's deadline is at started
	})
	defer cancel()
	ctx = testseam.WithCallDeadline(ctx, deadlineAt(started))
	out, err := lambda.NewHandler(fn).Invoke(ctx, pathEnvelope(t, "call-slow", pathIn{ID: "b-7"}))
	if err != nil {
		t.Fatal(err)
	}
	a := answerOf(t, out)
	if a == nil || a.Error != "TIMEOUT" || a.Retryable || !strings.Contains(a.Hint, "may have taken effect") {
		t.Fatalf("answer: %+v", a)
	}
	it := e.item(t, "call-slow")
	if str(it, "status") != audit.StatusDone || str(it, "stage") != "handler" || str(it, "errorCode") != "TIMEOUT" ||
		str(it, "outcome") != audit.OutcomeUnknown || str(it, "lateOutcome") != "" || str(it, "attemptId") == "" {
		t.Fatalf("row at the deadline: %v", it)
	}

	close(release)
	select {
	case <-rec.written:
	case <-time.After(30 * time.Second): // a safety net, not a timing assertion
		t.Fatal("the handler's late end was never recorded")
	}
	it = e.item(t, "call-slow")
	if str(it, "lateOutcome") != "ok" || str(it, "finishedAt") == "" || str(it, "finishedAt") <= str(it, "startedAt") ||
		str(it, "outcome") != audit.OutcomeUnknown || str(it, "errorCode") != "TIMEOUT" || str(it, "status") != audit.StatusDone {
		t.Errorf("row after the late end: %v", it)
	}
	if runs.Load() != 1 {
		t.Errorf("the handler ran %d times", runs.Load())
	}
}

// TestAdapterHangingHookLeavesItsFinalRow: a hook that hangs, ignoring its
// context, still leaves the final row (TIMEOUT at the hook's stage) before
// Lambda's deadline; the invocation returns instead of hanging.
func TestAdapterHangingHookLeavesItsFinalRow(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	hang := map[string]adapter.Hooks{
		"before_tool_call": {BeforeToolCall: func(context.Context, *adapter.Call, json.RawMessage) (json.RawMessage, error) {
			<-release
			return nil, nil
		}},
		"before_handle": {BeforeHandle: func(context.Context, *adapter.Call) error { <-release; return nil }},
		"after_handle":  {AfterHandle: func(context.Context, *adapter.Call, any) (any, error) { <-release; return nil, nil }},
	}
	for stage, hooks := range hang {
		t.Run(stage, func(t *testing.T) {
			e := newEnv(t)
			var runs atomic.Int32
			fn := newFunction(countingDelete(t, &runs), adapter.WithAuditor(e.auditor(t, audit.Config{})), adapter.WithHooks(hooks),
				adapter.WithReserve(700*time.Millisecond), quietAdapter())
			a := answerOf(t, invokeLambdaWithin(t, fn, pathEnvelope(t, "call-hang", pathIn{ID: "b-8"}), "", 1500*time.Millisecond))
			if a == nil || a.Error != "TIMEOUT" {
				t.Fatalf("answer: %+v", a)
			}
			it := e.item(t, "call-hang")
			if str(it, "status") != audit.StatusDone || str(it, "stage") != stage || str(it, "errorCode") != "TIMEOUT" {
				t.Errorf("row: %v", it)
			}
		})
	}
}
