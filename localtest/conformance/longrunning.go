package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/mcpfn/mcpfn/adapter"
)

// The fixtures of long-running calls: progress and log notifications during
// a call (tools-call-with-progress, SEP-2575's no-log-without-logLevel) and
// the Tasks extension (io.modelcontextprotocol/tasks, SEP-2663), whose
// scenarios call tools by these plain names.
const (
	ToolProgress = "test_tool_with_progress"
	ToolLogging  = "test_logging_tool"

	ToolGreet            = "greet"
	ToolSlowCompute      = "slow_compute"
	ToolFailingJob       = "failing_job"
	ToolProtocolErrorJob = "protocol_error_job"
	ToolConfirmDelete    = "confirm_delete"
	ToolMultiInput       = "multi_input"
	ToolWithTask         = "test_tool_with_task"
)

// progressStep is the pause between two progress reports of
// test_tool_with_progress (the suite's description: about 50 ms).
const progressStep = 50 * time.Millisecond

// failAfter is how long failing_job works before its tool error (the
// suite's "after ~1s").
const failAfter = time.Second

// pause waits d, or less if ctx ends first (then it returns ctx's error):
// every waiting fixture honours cancellation, as a task must.
func pause(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d): // collected once it fires or is unreachable (Go ≥ 1.23)
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Progress reports 0/100, 50/100 and 100/100 about 50 ms apart through
// call.Progress, then answers.
func Progress() *adapter.Tool {
	return adapter.MustDefine(adapter.ToolDef[none, adapter.Content]{
		Name:        ToolProgress,
		Description: "Reports progress 0, 50 and 100 of 100, about 50 ms apart, then answers.",
		ReadOnly:    true,
		Idempotent:  true,
		Handler: func(ctx context.Context, c *adapter.Call, _ none) (adapter.Content, error) {
			for i, done := range []float64{0, 50, 100} {
				if i > 0 {
					if err := pause(ctx, progressStep); err != nil {
						return adapter.Content{}, err
					}
				}
				c.Progress(done, 100, fmt.Sprintf("step %d of 3", i+1))
			}
			return text("progress done"), nil
		},
	})
}

// Logging sends log messages through call.Log and answers at once; a
// request without a log level must get none of them.
func Logging() *adapter.Tool {
	return adapter.MustDefine(adapter.ToolDef[none, adapter.Content]{
		Name:        ToolLogging,
		Description: "Sends an info and a debug log message, then answers.",
		ReadOnly:    true,
		Idempotent:  true,
		Handler: func(_ context.Context, c *adapter.Call, _ none) (adapter.Content, error) {
			c.Log("info", "test_logging_tool: started")
			c.Log("debug", map[string]any{"step": "answering"})
			return text("logging done"), nil
		},
	})
}

// Greet is synchronous only: "Hello, {name}!".
func Greet() *adapter.Tool {
	type in struct {
		Name string `json:"name" jsonschema:"who to greet"`
	}
	return adapter.MustDefine(adapter.ToolDef[in, adapter.Content]{
		Name:        ToolGreet,
		Description: "Greets by name (synchronous only).",
		ReadOnly:    true,
		Idempotent:  true,
		Handler: func(_ context.Context, _ *adapter.Call, in in) (adapter.Content, error) {
			return text("Hello, " + in.Name + "!"), nil
		},
	})
}

// StoppedMarker starts the line slow_compute writes to stderr (its
// function's log) when its context ends before its work does, followed by
// its label: the local stack's tests see by it that a cancel reached the
// handler.
const StoppedMarker = "slow_compute: stopped: "

// SlowCompute works for seconds seconds, then answers with its label; a
// task when the client declares the extension. It stops as soon as its
// context ends, so a cancelled task ends cancelled.
func SlowCompute() *adapter.Tool {
	type in struct {
		Seconds float64 `json:"seconds,omitempty" jsonschema:"how long to work, in seconds (0: answer at once)"`
		Label   string  `json:"label,omitempty" jsonschema:"a label echoed in the answer"`
	}
	return adapter.MustDefine(adapter.ToolDef[in, adapter.Content]{
		Name:        ToolSlowCompute,
		Description: "Works for the given number of seconds, then answers with its label (task optional).",
		ReadOnly:    true,
		Idempotent:  true,
		TaskSupport: adapter.TaskOptional,
		RefineInput: adapter.Refine{"seconds": nonNegative},
		Handler: func(ctx context.Context, c *adapter.Call, in in) (adapter.Content, error) {
			// One progress report a second (a task's statusMessage): the
			// local stack's end-to-end test watches a long task advance.
			total := time.Duration(in.Seconds * float64(time.Second))
			for done := time.Duration(0); done < total; done += time.Second {
				c.Progress(done.Seconds(), in.Seconds, in.Label)
				if err := pause(ctx, min(time.Second, total-done)); err != nil {
					fmt.Fprintf(os.Stderr, "%s%s after %s: %v\n", StoppedMarker, in.Label, done, err)
					return adapter.Content{}, err
				}
			}
			return text(fmt.Sprintf("computed %q in %gs", in.Label, in.Seconds)), nil
		},
	})
}

// FailingJob works about a second, then fails with a tool error: a task
// that ends completed with isError, not failed. Task required.
func FailingJob() *adapter.Tool {
	return adapter.MustDefine(adapter.ToolDef[none, adapter.Content]{
		Name:        ToolFailingJob,
		Description: "Works about a second, then fails with a tool error (task required).",
		ReadOnly:    true,
		TaskSupport: adapter.TaskRequired,
		Handler: func(ctx context.Context, _ *adapter.Call, _ none) (adapter.Content, error) {
			if err := pause(ctx, failAfter); err != nil {
				return adapter.Content{}, err
			}
			return adapter.Content{}, adapter.NewError(adapter.CodeConflict, "failing_job failed, as it always does")
		},
	})
}

// ProtocolErrorJob panics: the adapter answers a JSON-RPC error, and a task
// ends failed with it.
func ProtocolErrorJob() *adapter.Tool {
	return adapter.MustDefine(adapter.ToolDef[none, adapter.Content]{
		Name:        ToolProtocolErrorJob,
		Description: "Panics, which ends its task failed with a protocol error (task optional).",
		ReadOnly:    true,
		TaskSupport: adapter.TaskOptional,
		Handler: func(context.Context, *adapter.Call, none) (adapter.Content, error) {
			panic("protocol_error_job: deliberate panic")
		},
	})
}

// confirmKey is confirm_delete's one input request.
const confirmKey = "confirm"

// ConfirmDelete asks for a confirmation (one elicitation), then "deletes"
// the file: a task parks input_required until tasks/update answers.
func ConfirmDelete() *adapter.Tool {
	type in struct {
		Filename string `json:"filename" jsonschema:"the file to delete"`
	}
	return adapter.MustDefine(adapter.ToolDef[in, adapter.Content]{
		Name:        ToolConfirmDelete,
		Description: "Asks for a confirmation, then reports the file deleted (nothing is deleted; task optional).",
		TaskSupport: adapter.TaskOptional,
		Handler: func(_ context.Context, c *adapter.Call, in in) (adapter.Content, error) {
			raw, ok := c.InputResponses()[confirmKey]
			if !ok {
				return adapter.Content{}, adapter.RequireInput(map[string]adapter.InputRequest{
					confirmKey: elicit("Delete "+in.Filename+"?", "confirm", "boolean"),
				}, "")
			}
			if accepted(raw) && field(raw, "confirm") == "true" {
				return text("deleted " + in.Filename), nil
			}
			return text("kept " + in.Filename), nil
		},
	})
}

// multiKeys are multi_input's two input requests, asked at once.
var multiKeys = []string{"first_name", "last_name"}

// MultiInput asks two questions at once and completes once both are
// answered, re-asking only what is still open.
func MultiInput() *adapter.Tool {
	return adapter.MustDefine(adapter.ToolDef[none, adapter.Content]{
		Name:        ToolMultiInput,
		Description: "Asks two questions at once, then answers with both (task optional).",
		TaskSupport: adapter.TaskOptional,
		Handler: func(_ context.Context, c *adapter.Call, _ none) (adapter.Content, error) {
			open := map[string]adapter.InputRequest{}
			var got []string
			for _, k := range multiKeys {
				raw, ok := c.InputResponses()[k]
				if !ok {
					open[k] = elicit("Your "+strings.ReplaceAll(k, "_", " ")+"?", "name", "string")
					continue
				}
				got = append(got, field(raw, "name"))
			}
			if len(open) > 0 {
				return adapter.Content{}, adapter.RequireInput(open, "")
			}
			return text("got " + strings.Join(got, " ")), nil
		},
	})
}

// WithTask gathers the user's name synchronously (a multi-round call), then
// runs the rest as a task (adapter.StartTask); the task's answer names the
// user. Task required.
func WithTask() *adapter.Tool {
	return adapter.MustDefine(adapter.ToolDef[none, adapter.Content]{
		Name:        ToolWithTask,
		Description: "Asks the user's name, then greets them from a task (task required).",
		TaskSupport: adapter.TaskRequired,
		// Its rounds run synchronously until it returns StartTask.
		TaskAfterInput: true,
		Handler: func(_ context.Context, c *adapter.Call, _ none) (adapter.Content, error) {
			raw, ok := c.InputResponses()["user_name"]
			switch {
			case !ok:
				return adapter.Content{}, adapter.RequireInput(map[string]adapter.InputRequest{
					"user_name": elicit("What is your name?", "name", "string"),
				}, "")
			case c.TaskID() == "":
				return adapter.Content{}, adapter.StartTask()
			}
			return text("Hello, " + field(raw, "name") + ", from a task!"), nil
		},
	})
}

// accepted reports whether an elicitation answer's action is accept.
func accepted(raw json.RawMessage) bool {
	var r struct {
		Action string `json:"action"`
	}
	return json.Unmarshal(raw, &r) == nil && r.Action == "accept"
}

// nonNegative bounds a number from below by 0.
func nonNegative(p *jsonschema.Schema) { p.Minimum = jsonschema.Ptr(0.0) }

// ToolCrashJob is not one of the suite's tools: the local stack's
// end-to-end tests run it to see a task whose function dies.
const ToolCrashJob = "local_crash_job"

// CrashMarker starts the line CrashJob writes to stderr (the function's
// log) as its handler starts, followed by the call id: a test counts the
// handler's executions by it.
const CrashMarker = "local_crash_job: handler started "

// CrashJob is a destructive task whose process exits mid-handler: Lambda
// retries the asynchronous invocation, the audit's pending row refuses the
// retry (a destructive call runs at most once), and the task ends failed.
func CrashJob() *adapter.Tool {
	type in struct {
		ID string `json:"id" jsonschema:"recorded as the call's entityId, so a test finds its rows"`
	}
	return adapter.MustDefine(adapter.ToolDef[in, adapter.Content]{
		Name:        ToolCrashJob,
		Description: "Test fixture: a destructive task whose process exits mid-handler. Local stack only.",
		Destructive: true,
		TaskSupport: adapter.TaskRequired,
		Handler: func(_ context.Context, c *adapter.Call, in in) (adapter.Content, error) {
			c.SetDimension("entityId", in.ID)
			fmt.Fprintln(os.Stderr, CrashMarker+c.ID)
			os.Exit(3)
			return adapter.Content{}, nil
		},
	})
}
