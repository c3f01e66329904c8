package adapter_test

import (
	"context"
	"testing"

	"github.com/mcpfn/mcpfn/adapter"
)

func destructiveWidget(d *adapter.ToolDef[widgetIn, widgetOut]) { d.Destructive = true }

// TestUntracedDestructiveCallRowsNameTheCallsTrace: the audit stage is an
// ordinary hook set. An untraced call's trace is minted once, when the call
// is built, so the pending row, the final row and what any other hook reads
// from Call.Trace name the same trace; the final row completes the pending
// row of its own attempt.
func TestUntracedDestructiveCallRowsNameTheCallsTrace(t *testing.T) {
	r := &rows{}
	var seen adapter.Trace
	fn := newFunction(widgetTool(t, destructiveWidget), adapter.WithAuditor(r), adapter.WithHooks(adapter.Hooks{
		AfterToolCall: func(_ context.Context, c *adapter.Call, _ *adapter.Outcome) { seen = c.Trace() },
	}))
	res, _ := envelopeResult(t, invoke(t, fn, envelopeOf(t, "d-1", "widget_update", map[string]any{"entityId": "w"}, alice), lambdaInvoke{}))
	if res.IsError {
		t.Fatalf("call failed: %s", res.Content[0].Text)
	}
	if len(r.pending) != 1 {
		t.Fatalf("%d pending rows", len(r.pending))
	}
	pending, final := r.pending[0], r.last(t)
	if seen.From != "new" || seen.Root == "" || pending.TraceID != seen.Root || final.TraceID != seen.Root || final.SpanID != seen.SpanID {
		t.Fatalf("trace %+v; pending row trace %q, final row trace %q span %q", seen, pending.TraceID, final.TraceID, final.SpanID)
	}
	if pending.AttemptID == "" || final.AttemptID != pending.AttemptID || final.ParentSpanID != "" {
		t.Fatalf("attempts: pending %q, final %q (parent %q)", pending.AttemptID, final.AttemptID, final.ParentSpanID)
	}
}

// TestAuditorTakesItsPlaceAmongTheHooks: WithAuditor is not privileged.
// Given first, as Start gives it, its AfterToolCall runs last and its row
// carries a dimension another set adds there; given after that set, it runs
// before it (reverse order) and does not.
func TestAuditorTakesItsPlaceAmongTheHooks(t *testing.T) {
	late := adapter.WithHooks(adapter.Hooks{AfterToolCall: func(_ context.Context, c *adapter.Call, _ *adapter.Outcome) { c.SetDimension("late", "1") }})
	for _, auditorFirst := range []bool{true, false} {
		r := &rows{}
		opts := []adapter.Option{late, adapter.WithAuditor(r)}
		if auditorFirst {
			opts = []adapter.Option{adapter.WithAuditor(r), late}
		}
		invoke(t, newFunction(widgetTool(t), opts...), envelopeOf(t, "o-1", "widget_update", map[string]any{"entityId": "w"}, alice), lambdaInvoke{})
		if got := r.last(t).Dimensions["late"] == "1"; got != auditorFirst {
			t.Errorf("auditor first %v: its row saw the other set's AfterToolCall dimension: %v", auditorFirst, got)
		}
	}
}
