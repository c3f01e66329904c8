package audit_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
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

// TestAdapterDestructiveTimeoutIsOutcomeUnknownThenLate: a destructive
// handler that outlives its deadline is answered TIMEOUT, not retryable,
// "may have taken effect"; its row (the pending row, completed) says stage
// handler, TIMEOUT, outcome unknown, never a plain failure; and when the
// handler finishes later in the same process, the row records that.
func TestAdapterDestructiveTimeoutIsOutcomeUnknownThenLate(t *testing.T) {
	e := newEnv(t)
	release := make(chan struct{})
	var runs atomic.Int32
	tool := adapter.MustDefine(adapter.ToolDef[pathIn, deleteOut]{
		Name:        "broadcast_delete",
		Destructive: true,
		Handler: func(_ context.Context, _ *adapter.Call, in pathIn) (deleteOut, error) {
			runs.Add(1)
			<-release // a client library that ignores the context
			return deleteOut{Deleted: in.ID}, nil
		},
	})
	rec := lateSignal{e.auditor(t, audit.Config{}), make(chan struct{})}
	fn := newFunction(tool, adapter.WithAuditor(rec), adapter.WithReserve(700*time.Millisecond), quietAdapter())
	// The deadline leaves the write-ahead row (a real DynamoDB Local round
	// trip) seconds to land, so that on a loaded machine the deadline still
	// falls in the handler, the stage this test is about.
	a := answerOf(t, invokeLambdaWithin(t, fn, pathEnvelope(t, "call-slow", pathIn{ID: "b-7"}), "", 4*time.Second))
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
