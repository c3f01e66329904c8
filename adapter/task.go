package adapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"

	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/taskstore"
	"github.com/mcpfn/mcpfn/wire"
)

// TaskSupport says whether a tool runs as a task of the MCP Tasks extension
// (io.modelcontextprotocol/tasks): the gateway then answers a tools/call
// with a task at once and invokes the function asynchronously to run it.
type TaskSupport string

const (
	// TaskForbidden (the default, also spelled ""): always synchronous.
	TaskForbidden TaskSupport = "forbidden"
	// TaskOptional: a task when the client's request declares the
	// extension, synchronous otherwise.
	TaskOptional TaskSupport = "optional"
	// TaskRequired: only as a task; a client without the extension is
	// refused (-32021).
	TaskRequired TaskSupport = "required"
)

func (s TaskSupport) normal() (TaskSupport, bool) {
	switch s {
	case "", TaskForbidden:
		return TaskForbidden, true
	case TaskOptional, TaskRequired:
		return s, true
	}
	return s, false
}

// TaskSupport returns whether the tool runs as a task.
func (t *Tool) TaskSupport() TaskSupport { return t.tasks }

// TaskAfterInput reports whether the tool's calls start synchronously and
// become a task when the handler returns [StartTask] (ToolDef.TaskAfterInput).
func (t *Tool) TaskAfterInput() bool { return t.taskAfterInput }

// EnvTaskWatchInterval overrides [DefaultWatchInterval] (a Go duration).
const EnvTaskWatchInterval = "MCPFN_TASK_WATCH_INTERVAL"

// taskOptions are the function's task store and how often a running call's
// cancel record is read.
type taskOptions struct {
	store *taskstore.Store
	watch time.Duration
}

func (o taskOptions) interval() time.Duration {
	if o.watch > 0 {
		return o.watch
	}
	return DefaultWatchInterval
}

// WithTaskStore gives the function its tasks table: it runs the task
// envelopes a gateway sends and watches cancel markers. [Start] builds it
// from MCPFN_TASKS_TABLE. Without one, a task run is refused.
func WithTaskStore(s *taskstore.Store) Option { return func(o *options) { o.tasks.store = s } }

// WithTaskWatchInterval sets how often a running call's task record or
// cancel marker is read (default [DefaultWatchInterval]).
func WithTaskWatchInterval(d time.Duration) Option { return func(o *options) { o.tasks.watch = d } }

// taskOptionsFromEnv are the options MCPFN_TASKS_TABLE and
// MCPFN_TASK_WATCH_INTERVAL configure; none when the table is unset.
func taskOptionsFromEnv(ctx context.Context, getenv func(string) string) ([]Option, error) {
	table, sopts, err := taskstore.OptionsFromEnv(getenv)
	if err != nil || table == "" {
		return nil, err
	}
	opts := []Option{}
	if v := strings.TrimSpace(getenv(EnvTaskWatchInterval)); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%s=%q is not a positive duration", EnvTaskWatchInterval, v)
		}
		opts = append(opts, WithTaskWatchInterval(d))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, err
	}
	return append(opts, WithTaskStore(taskstore.New(audit.NewDynamoClient(cfg), table, sopts))), nil
}

// taskRun is the task a call runs, once claimed.
type taskRun struct {
	id, runID string
	attempts  int
}

// startRun ends step 1 for a verified call: a task envelope claims its task
// (the token named the same task), and the call's cancel record — the task,
// or a synchronous call's cancel marker — is watched from here until the
// call ends.
func (r *callRun) startRun() (Stage, error) {
	st := r.f.opts.tasks.store
	if r.d.task == "" && (r.d.cancel == nil || st == nil) {
		return StageDecode, nil // nothing to watch: a plain call costs nothing here
	}
	// Ended by finishRun, once the call's outcome is known.
	r.ctx, r.cancel = context.WithCancelCause(r.ctx)
	var wctx context.Context
	wctx, r.stopWatch = context.WithCancel(r.ctx)
	if r.d.task == "" {
		r.watchSyncCancel(wctx)
		return StageDecode, nil
	}
	if st == nil {
		return StageDecode, &protocolError{wire.RPCInternalError,
			NewError(CodeUnavailable, "this function has no tasks table (MCPFN_TASKS_TABLE), so it cannot run a task")}
	}
	runID := r.call.Lambda.RequestID
	if runID == "" {
		runID = r.call.ID
	}
	t, err := st.Claim(r.parent, r.d.task, runID)
	switch {
	case errors.Is(err, taskstore.ErrCancelled):
		r.cancel(errCallCancelled)
		return StageDecode, r.f.cancelledError(StageDecode, err)
	case err != nil:
		// Not this run's task to touch: gone, finished, or another run's.
		return StageDecode, &protocolError{wire.RPCInvalidParams, NewError(CodeConflict, "the task cannot be run: "+err.Error()).WithCause(err)}
	}
	r.task = &taskRun{id: t.ID, runID: runID, attempts: t.Attempts}
	r.call.taskID = t.ID
	if r.f.tool.tasks == TaskForbidden {
		return StageDecode, &protocolError{wire.RPCInvalidParams, Errorf(CodeBadRequest, "tool %q does not run as a task", r.f.tool.name)}
	}
	if r.f.tool.destructive && t.Attempts > 1 && r.f.opts.auditor == nil {
		// Without an audit table there is no pending row to tell a crash
		// before the handler from one after: at most once means not again.
		return StageBeforeHandle, errInterrupted
	}
	r.watchCancel(st.Watch(wctx, t.ID, r.f.opts.tasks.interval()), wctx)
	r.call.notes = forTask(func(msg string) {
		if err := st.SetStatusMessage(r.parent, t.ID, runID, msg); errors.Is(err, taskstore.ErrCancelled) {
			r.cancel(errCallCancelled)
		}
	})
	return StageDecode, nil
}

// StartTask, returned by a handler as its error, asks for the rest of the
// call to run as a task: typically on the last synchronous round of a
// multi-round call (MRTR before a task is resolved synchronously), once the
// client's answers are in. The gateway then creates the task, answers the
// client with it and invokes the function again, asynchronously, with the
// same round — [Call.TaskID] then names the task. Only a tool whose
// TaskSupport is optional or required may return it, and only outside a
// task run; elsewhere it is an INTERNAL_SERVER_ERROR. It must come before
// the handler does anything the task run will do again.
func StartTask() error { return errStartTask }

var errStartTask = errors.New("adapter: the handler asked to run the call as a task")

// startTask answers a call whose handler returned StartTask.
func (r *callRun) startTask(stage Stage, err error) (response, bool) {
	if stage != StageHandler || !errors.Is(err, errStartTask) {
		return response{}, false
	}
	if r.d.source != SourceEnvelope || r.d.task != "" || r.f.tool.tasks == TaskForbidden {
		return r.fail(stage, NewError(CodeInternal, "Internal server error").
			WithCause(errors.New("StartTask from a tool without task support, in a task run, or outside an mcpfn envelope"))), true
	}
	if r.call.MCP != nil {
		r.call.MCP.Outcome = "task"
	}
	r.out.Stage = StageDone
	return response{startTask: true, callID: r.call.ID}, true
}

// errInterrupted ends a destructive task whose earlier run did not finish.
var errInterrupted = NewError(CodeConflict, "interrupted; not re-run: an earlier run of this destructive task did not finish, and it is not run again")

// finishRun stops the call's watchers, flushes its last progress and, for a
// task run, records the outcome in the task. It runs as the call ends,
// before its audit row is written.
func (r *callRun) finishRun() {
	r.call.notes.close()
	if r.cancel == nil {
		return // nothing was watched
	}
	r.stopWatch()
	cancelled := errors.Is(context.Cause(r.ctx), errCallCancelled)
	r.cancel(nil)
	if r.task == nil || cancelled {
		return // a cancelled task stays cancelled
	}
	o := r.taskOutcome()
	err := r.f.opts.tasks.store.Finish(r.parent, r.task.id, r.task.runID, o)
	status := string(o.Status)
	switch {
	case errors.Is(err, taskstore.ErrTooLarge):
		status = string(taskstore.StatusFailed)
		r.f.logf("mcpfn: task %s: %v", r.task.id, err)
	case err != nil:
		status = "unrecorded"
		r.f.logf("mcpfn: task %s: recording its outcome: %v", r.task.id, err)
	}
	r.call.SetDimension("mcpfn.taskStatus", status)
}

// taskOutcome maps how the call ended onto the task's states: a JSON-RPC
// error (a protocol failure, a panic, an interrupted destructive run) is
// failed; a round asking for input is input_required; every result, an
// isError one included, is completed.
func (r *callRun) taskOutcome() taskstore.Outcome {
	internal := func(msg string) taskstore.Outcome {
		return taskstore.Failed(taskstore.RPCError{Code: wire.RPCInternalError, Message: msg})
	}
	switch pub := r.out.Public; {
	case r.rpcErr != nil:
		return taskstore.Failed(taskstore.RPCError{Code: r.rpcErr.Code, Message: r.rpcErr.Message})
	case r.out.Panicked:
		return internal("the tool failed unexpectedly (it panicked)")
	case errors.Is(r.out.Err, errInterrupted) || pub != nil && pub.Code == CodeConflict && r.out.Stage == StageBeforeHandle && r.f.tool.destructive && hasEarlierAttempt(pub):
		return internal(errInterrupted.Message)
	case r.call.MCP != nil && r.call.MCP.Outcome == "input_required":
		var ir struct {
			InputRequests map[string]json.RawMessage `json:"inputRequests"`
			RequestState  string                     `json:"requestState"`
		}
		if err := json.Unmarshal(r.out.Result, &ir); err != nil {
			return internal("the tool's input request could not be recorded")
		}
		return taskstore.InputRequired(ir.InputRequests, []byte(ir.RequestState))
	case r.out.ResultRef != nil:
		// Stored (claimcheck.go): the record holds the reference.
		ref, err := json.Marshal(r.out.ResultRef)
		if err != nil {
			return internal("the tool's result reference could not be recorded")
		}
		return taskstore.CompletedRef(ref)
	}
	return taskstore.Completed(r.out.Result)
}

// hasEarlierAttempt: e is the audit stage's refusal of a call id that
// already ran (decision 0016), not a hook's own CONFLICT.
func hasEarlierAttempt(e *Error) bool {
	d, ok := e.Details.(map[string]any)
	_, had := d["earlierAttempt"]
	return ok && had
}
