package conformance_test

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/calltoken"
	"github.com/mcpfn/mcpfn/internal/lambdatest"
	"github.com/mcpfn/mcpfn/localtest/conformance"
	"github.com/mcpfn/mcpfn/wire"
)

// fixtureCall invokes a fixture through the adapter's streaming entry point,
// as its function serves a gateway's call, and returns the frames before the
// final payload and the payload's envelope response. These run without the
// stack: they pin what each fixture does before the suite looks at it.
func fixtureCall(t *testing.T, tool string, args any, stream *wire.StreamRequest, responses map[string]any) ([]wire.Frame, wire.EnvelopeResponse) {
	t.Helper()
	def, err := conformance.ByName(tool)
	if err != nil {
		t.Fatal(err)
	}
	fn := adapter.New(def, adapter.WithCallVerifier(lambdatest.Verifier("fn-"+tool)))
	raw, _ := json.Marshal(args)
	env := wire.Envelope{
		Version: wire.EnvelopeVersion,
		CallID:  "c-" + tool,
		Params:  wire.EnvelopeParams{Name: tool, Arguments: raw},
		MCP:     wire.EnvelopeMCP{Era: adapter.EraModern, Method: "tools/call", ProtocolVersion: wire.ModernProtocolVersion},
		Stream:  stream,
	}
	if responses != nil {
		env.Params.InputResponses, _ = json.Marshal(responses)
		// A retry's token binds its answers, as the gateway signs it.
		env.CallToken = lambdatest.RoundToken("fn-"+tool, tool, "c-"+tool, nil, raw, env.Params.InputResponses, "")
	}
	// Signed as the gateway signs a retry: its answers bound (calltoken v2).
	env.CallToken, err = lambdatest.Signer(map[string]string{tool: "fn-" + tool}).Sign(calltoken.Call{
		Tool: tool, CallID: env.CallID, Args: raw, InputResponses: env.Params.InputResponses, Expires: time.Now().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	payload, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := lambdatest.Context(context.Background(), lambdatest.Invocation{RequestID: "req-" + tool, Timeout: 10 * time.Second})
	defer cancel()
	sr := wire.NewStreamReader(fn.InvokeStream(ctx, payload))
	var frames []wire.Frame
	for {
		f, final, err := sr.Next()
		switch {
		case err == io.EOF:
			t.Fatalf("%s: no final payload", tool)
		case err != nil:
			t.Fatal(err)
		case final != nil:
			var resp wire.EnvelopeResponse
			if err := json.Unmarshal(final, &resp); err != nil {
				t.Fatalf("%s: %s: %v", tool, final, err)
			}
			return frames, resp
		}
		frames = append(frames, *f)
	}
}

func TestProgressFixtureReportsThreeStepsInOrder(t *testing.T) {
	frames, resp := fixtureCall(t, conformance.ToolProgress, map[string]any{}, &wire.StreamRequest{Progress: true}, nil)
	var got []float64
	for _, f := range frames {
		if f.Kind == "progress" && f.Total != nil && *f.Total == 100 {
			got = append(got, *f.Progress)
		}
	}
	if len(got) != 3 || got[0] != 0 || got[1] != 50 || got[2] != 100 || resp.Result == nil {
		t.Fatalf("progress %v (frames %+v), result %s: want 0, 50, 100 of 100 before the result", got, frames, resp.Result)
	}
}

func TestLoggingFixtureLogsOnlyWhenAsked(t *testing.T) {
	frames, _ := fixtureCall(t, conformance.ToolLogging, map[string]any{}, &wire.StreamRequest{LogLevel: "debug"}, nil)
	if len(frames) != 2 || frames[0].Kind != "log" {
		t.Fatalf("with log level debug: frames %+v, want two log messages", frames)
	}
	if frames, _ := fixtureCall(t, conformance.ToolLogging, map[string]any{}, nil, nil); len(frames) != 0 {
		t.Fatalf("without a log level: frames %+v", frames)
	}
}

func TestTaskFixturesDeclareTheirTaskSupport(t *testing.T) {
	want := map[string]adapter.TaskSupport{
		conformance.ToolGreet: adapter.TaskForbidden, conformance.ToolSlowCompute: adapter.TaskOptional,
		conformance.ToolFailingJob: adapter.TaskRequired, conformance.ToolProtocolErrorJob: adapter.TaskOptional,
		conformance.ToolConfirmDelete: adapter.TaskOptional, conformance.ToolMultiInput: adapter.TaskOptional,
		conformance.ToolWithTask: adapter.TaskRequired, conformance.ToolCrashJob: adapter.TaskRequired,
	}
	for name, ts := range want {
		tool, err := conformance.ByName(name)
		if err != nil {
			t.Fatal(err)
		}
		if tool.TaskSupport() != ts {
			t.Errorf("%s: TaskSupport %q, want %q", name, tool.TaskSupport(), ts)
		}
	}
	if tool, _ := conformance.ByName(conformance.ToolWithTask); !tool.TaskAfterInput() {
		t.Errorf("%s must gather its input synchronously before it becomes a task (TaskAfterInput)", conformance.ToolWithTask)
	}
	for _, n := range conformance.Names() {
		if n == conformance.ToolCrashJob {
			t.Errorf("%s is the local stack's, not one of the suite's tools", n)
		}
	}
}

func TestSyncFixturesAnswer(t *testing.T) {
	for _, c := range []struct {
		tool      string
		args      any
		responses map[string]any
		want      string
	}{
		{conformance.ToolGreet, map[string]any{"name": "Ada"}, nil, `"Hello, Ada!"`},
		{conformance.ToolSlowCompute, map[string]any{"seconds": 0, "label": "now"}, nil, `computed \"now\" in 0s`},
		{conformance.ToolConfirmDelete, map[string]any{"filename": "a.txt"}, nil, `"inputRequests"`},
		{conformance.ToolConfirmDelete, map[string]any{"filename": "a.txt"},
			map[string]any{"confirm": map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}, `deleted a.txt`},
		{conformance.ToolMultiInput, map[string]any{},
			map[string]any{"first_name": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}}, `"last_name"`},
		{conformance.ToolMultiInput, map[string]any{}, map[string]any{
			"first_name": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}},
			"last_name":  map[string]any{"action": "accept", "content": map[string]any{"name": "Lovelace"}}}, `got Ada Lovelace`},
		{conformance.ToolWithTask, map[string]any{}, nil, `"user_name"`},
	} {
		_, resp := fixtureCall(t, c.tool, c.args, nil, c.responses)
		if !strings.Contains(string(resp.Result), c.want) {
			t.Errorf("%s %v: result %s, error %+v; want it to contain %s", c.tool, c.responses, resp.Result, resp.Error, c.want)
		}
	}
	// The last synchronous round of test_tool_with_task asks for a task.
	_, resp := fixtureCall(t, conformance.ToolWithTask, map[string]any{}, nil,
		map[string]any{"user_name": map[string]any{"action": "accept", "content": map[string]any{"name": "Alice"}}})
	if !resp.StartTask {
		t.Errorf("test_tool_with_task with its answer: %+v, want startTask", resp)
	}
}
