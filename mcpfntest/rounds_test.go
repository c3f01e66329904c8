package mcpfntest_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/mcpfntest"
)

func TestProgressReachesTheSinkAndTheResultInOrder(t *testing.T) {
	var seen []mcpfntest.Progress
	res := mcpfntest.Call(t, countTo, map[string]any{"to": 3}, mcpfntest.OnProgress(func(p mcpfntest.Progress) {
		seen = append(seen, p)
	}))
	if got := mcpfntest.Output[countOut](t, res); got.Counted != 3 {
		t.Fatalf("output %+v", got)
	}
	want := []mcpfntest.Progress{{Progress: 1, Total: 3, Message: "step 1"}, {Progress: 2, Total: 3, Message: "step 2"}, {Progress: 3, Total: 3, Message: "step 3"}}
	if !slices.Equal(seen, want) || !slices.Equal(res.Progress, want) {
		t.Fatalf("sink %+v, result %+v, want %+v", seen, res.Progress, want)
	}
	if len(res.Rows) != 1 || !res.Rows[0].OK {
		t.Fatalf("rows %+v", res.Rows)
	}
	// A client without a progress token gets none.
	if res := mcpfntest.Call(t, countTo, map[string]any{"to": 3}); res.Progress != nil {
		t.Fatalf("progress without OnProgress: %+v", res.Progress)
	}
}

// The sink runs while the call does: the tool waits for the sink to let it
// finish.
func TestTheProgressSinkRunsWhileTheCallRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		proceed := make(chan struct{})
		res := mcpfntest.Call(t, gated.Bind(proceed), nil, mcpfntest.OnProgress(func(mcpfntest.Progress) { close(proceed) }))
		if got := mcpfntest.Output[countOut](t, res); got.Counted != 2 || len(res.Progress) != 1 {
			t.Fatalf("output %+v after %d reports", got, len(res.Progress))
		}
	})
}

// gated reports its first step, then waits for proceed or its context.
var gated = adapter.Declare(adapter.ToolDef[struct{}, countOut]{Name: "gated"},
	func(proceed chan struct{}, ctx context.Context, call *adapter.Call, _ struct{}) (countOut, error) {
		call.Progress(1, 2, "first step")
		select {
		case <-proceed:
			return countOut{Counted: 2}, nil
		case <-ctx.Done():
			return countOut{}, ctx.Err()
		}
	})

func TestTheCallEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	res := mcpfntest.Call(t, gated.Bind(nil), nil, mcpfntest.Context(ctx), mcpfntest.OnProgress(func(mcpfntest.Progress) { cancel() }))
	if res.Code() != adapter.CodeTimeout || len(res.Progress) != 1 {
		t.Fatalf("got %+v after %d reports", res.Err, len(res.Progress))
	}
}

func TestAMultiRoundCallIsAnsweredRoundByRound(t *testing.T) {
	var asked []string
	res := mcpfntest.Call(t, greeter, nil, mcpfntest.CallID("greet-1"), mcpfntest.Answer(func(key string, req adapter.InputRequest) any {
		asked = append(asked, key+" "+req.Method)
		if key == "name" {
			return map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}
		}
		return map[string]any{"action": "accept"}
	}))
	if got := mcpfntest.Output[greetOut](t, res); got.Greeting != "Hello, Ada" {
		t.Fatalf("output %+v", got)
	}
	if res.Rounds != 3 || !slices.Equal(asked, []string{"name elicitation/create", "confirm elicitation/create"}) {
		t.Fatalf("%d rounds, asked %v", res.Rounds, asked)
	}
	// One row per round, each under its request's call id. The adapter
	// tells a first round from a later one (MCP numbers neither).
	if len(res.Rows) != 3 {
		t.Fatalf("%d rows for 3 rounds", len(res.Rows))
	}
	for i, want := range []struct {
		callID, outcome string
		round           int
	}{{"greet-1", "input_required", 1}, {"greet-1/2", "input_required", 2}, {"greet-1/3", "complete", 2}} {
		row := res.Rows[i]
		if row.CallID != want.callID || row.MCPOutcome != want.outcome || row.MCPRound != want.round || !row.OK || row.Status != audit.StatusDone {
			t.Errorf("round %d row: call %s, outcome %s, round %d, ok %v", i+1, row.CallID, row.MCPOutcome, row.MCPRound, row.OK)
		}
	}

	// A declined confirmation ends the call in its third round.
	declined := mcpfntest.Call(t, greeter, nil, mcpfntest.Answer(func(key string, _ adapter.InputRequest) any {
		if key == "name" {
			return map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}
		}
		return map[string]any{"action": "decline"}
	}))
	if declined.Rounds != 3 || declined.Code() != adapter.CodeConflict || declined.Rows[2].ErrorCode != string(adapter.CodeConflict) {
		t.Fatalf("declined: %d rounds, %+v", declined.Rounds, declined.Err)
	}
}

// Answers that are not result objects are a protocol error, which the
// result reports as one.
func TestAnAnswerOfTheWrongShapeIsARPCError(t *testing.T) {
	res := mcpfntest.Call(t, greeter, nil, mcpfntest.Answer(func(string, adapter.InputRequest) any { return "Ada" }))
	if res.RPCError == nil || res.Rounds != 2 || res.CallToolResult != nil || res.IsError {
		t.Fatalf("got %+v", res)
	}
	if row := res.Rows[len(res.Rows)-1]; row.ErrorCode != string(adapter.CodeBadRequest) {
		t.Fatalf("row %+v", row)
	}
}

// A destructive tool that asks before it acts: every round is a request of
// its own, with its own write-ahead row, so a later round is not refused as
// a replay of the first.
func TestADestructiveToolCanAskBeforeItActs(t *testing.T) {
	var runs atomic.Int32
	purge := adapter.MustDefine(adapter.ToolDef[struct{}, countOut]{
		Name: "purge", Destructive: true,
		Handler: func(_ context.Context, call *adapter.Call, _ struct{}) (countOut, error) {
			if call.InputResponses() == nil {
				return countOut{}, adapter.RequireInput(map[string]adapter.InputRequest{"confirm": {Method: "elicitation/create", Params: map[string]any{"message": "Purge?"}}}, "")
			}
			runs.Add(1)
			return countOut{Counted: 1}, nil
		},
	})
	res := mcpfntest.Call(t, purge, nil, mcpfntest.Answer(func(string, adapter.InputRequest) any { return map[string]any{"action": "accept"} }))
	mcpfntest.Output[countOut](t, res)
	var statuses []string
	for _, r := range res.Rows {
		statuses = append(statuses, r.Status+" "+r.MCPOutcome)
	}
	if want := []string{"pending ", "done input_required", "pending ", "done complete"}; !slices.Equal(statuses, want) || runs.Load() != 1 {
		t.Fatalf("rows %q, want %q; purged %d times", statuses, want, runs.Load())
	}
}
