package audit_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
)

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
