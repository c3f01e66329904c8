package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/calltoken"
	"github.com/mcpfn/mcpfn/claimcheck"
	"github.com/mcpfn/mcpfn/taskstore"
	"github.com/mcpfn/mcpfn/wire"
)

// The MCP Tasks extension (v2, SEP-2663) on Lambda; docs/decisions/0022.
//
// A tools/call of a tool whose TaskSupport is optional or required, from a
// request that declares the extension in
// _meta["io.modelcontextprotocol/clientCapabilities"].extensions, becomes a
// task: the gateway authorizes it as any call, writes the task
// (taskstore.Create, owned by the verified caller), invokes the function
// asynchronously (InvocationType Event) with the envelope naming the task
// and a call token bound to it, and answers the flat CreateTaskResult.
// tasks/get, tasks/update and tasks/cancel are answered here from the table,
// once the go-sdk has checked the request as any other (they are custom
// methods of its server whose handler does nothing else); tasks/result and
// tasks/list (v1) fall through to it and are -32601.

// TasksExtension is the extension's id, advertised in capabilities.extensions.
const TasksExtension = "io.modelcontextprotocol/tasks"

// maxFunctionRun is Lambda's longest function timeout: a run that started
// inside its window has ended, one way or another, this long after.
const maxFunctionRun = 15 * time.Minute

// defaultTaskRunWindow covers Lambda's async queue and its retries with the
// default EventInvokeConfig: attempts of up to 15 minutes, retried after 1
// and 2 minutes, so the last one starts within about 33 minutes.
const defaultTaskRunWindow = 40 * time.Minute

// MCP error codes of SEP-2575 and SEP-2243.
const (
	codeHeaderMismatch    = mcp.CodeHeaderMismatch
	codeMissingCapability = mcp.CodeMissingRequiredClientCapabilities
)

// taskMessage is what the gateway reads of a message the tasks code
// handles.
type taskMessage struct {
	Params struct {
		Name           string                     `json:"name"`
		TaskID         *string                    `json:"taskId"`
		InputResponses map[string]json.RawMessage `json:"inputResponses"`
		RequestID      json.RawMessage            `json:"requestId"`
		Meta           struct {
			ProtocolVersion string           `json:"io.modelcontextprotocol/protocolVersion"`
			ClientInfo      *wire.ClientInfo `json:"io.modelcontextprotocol/clientInfo"`
			Capabilities    struct {
				Extensions map[string]json.RawMessage `json:"extensions"`
			} `json:"io.modelcontextprotocol/clientCapabilities"`
		} `json:"_meta"`
	} `json:"params"`
}

func (m *taskMessage) declaresTasks() bool {
	_, ok := m.Params.Meta.Capabilities.Extensions[TasksExtension]
	return ok
}

// serveTasks is dispatch's hook for a gateway with a tasks table. It
// answers tasks/get, tasks/update and tasks/cancel; marks a synchronous
// call cancelled on a notifications/cancelled the go-sdk accepts
// (cancel.go); and runs a tools/call that may become a task through the
// go-sdk with its answer buffered, to replace it with the CreateTaskResult.
// It reports whether it answered the message.
func (g *Gateway) serveTasks(w http.ResponseWriter, r *http.Request, msg []byte, ri *requestInfo) bool {
	switch ri.method {
	case "tasks/get", "tasks/update", "tasks/cancel", "tools/call", "notifications/cancelled":
	default:
		return false
	}
	var m taskMessage
	_ = json.Unmarshal(msg, &m) // a malformed message is the go-sdk's to refuse
	switch ri.method {
	case "notifications/cancelled":
		g.serveCancelled(w, r, ri, m.Params.RequestID)
		return true
	case "tools/call":
		ri.declaresTasks = m.declaresTasks()
		t := g.tools[m.Params.Name]
		if !ri.declaresTasks || t == nil || t.TaskSupport() == adapter.TaskForbidden {
			return false
		}
		buf := newBufferedResponse()
		g.mcp.ServeHTTP(buf, r)
		if ri.created != nil {
			b, _ := json.Marshal(ri.created)
			writeRPCResult(w, ri.jsonrpcID, b)
			return true
		}
		for k, vs := range buf.header {
			w.Header()[k] = vs
		}
		if buf.status != 0 {
			w.WriteHeader(buf.status)
		}
		_, _ = w.Write(buf.body.Bytes())
		return true
	}
	if len(ri.jsonrpcID) == 0 {
		w.WriteHeader(http.StatusAccepted) // a notification: nothing to answer
		return true
	}
	// Nothing acts on a request the go-sdk refuses (protocol version,
	// headers): it runs first, and its handler only notes that it accepted.
	buf := newBufferedResponse()
	g.mcp.ServeHTTP(buf, r)
	if !ri.checked {
		buf.copyTo(w)
		return true
	}
	result, rpcErr := g.taskMethod(r, ri, &m)
	if rpcErr != nil {
		writeRPCErrorFor(w, ri.errorStatus, rpcErr, ri.jsonrpcID)
		return true
	}
	writeRPCResult(w, ri.jsonrpcID, result)
	return true
}

// taskMethods are the tasks methods the gateway answers.
var taskMethods = []string{"tasks/get", "tasks/update", "tasks/cancel"}

// taskParams and taskChecked are what the go-sdk decodes and answers for
// a tasks method: the gateway reads the params and writes the answer
// itself (serveTasks).
type (
	taskParams  struct{ mcp.ParamsBase }
	taskChecked struct{ mcp.ResultBase }
)

// addTaskMethods makes the tasks methods known to the go-sdk server, so
// that it checks their requests as any other's before serveTasks acts.
func (g *Gateway) addTaskMethods() error {
	for _, method := range taskMethods {
		err := mcp.AddReceivingCustomMethod(g.server, method, func(ctx context.Context, _ *mcp.ServerSession, _ *taskParams) (*taskChecked, error) {
			if ri, _ := ctx.Value(requestInfoKey{}).(*requestInfo); ri != nil {
				ri.checked = true
			}
			return &taskChecked{}, nil
		})
		if err != nil {
			return fmt.Errorf("gateway: %w", err)
		}
	}
	return nil
}

// ack is the answer of tasks/update and tasks/cancel.
var ack = json.RawMessage(`{"resultType":"complete"}`)

// taskMethod answers tasks/get, tasks/update or tasks/cancel: the result,
// or the JSON-RPC error.
func (g *Gateway) taskMethod(r *http.Request, ri *requestInfo, m *taskMessage) (json.RawMessage, *wire.RPCError) {
	id := ""
	if m.Params.TaskID != nil {
		id = *m.Params.TaskID
	}
	if e := checkTaskHeaders(r.Header, ri.method, id); e != nil {
		return nil, e
	}
	if !m.declaresTasks() {
		return nil, missingTasks(ri.method + " needs the " + TasksExtension + " extension, declared in the request's _meta clientCapabilities")
	}
	if m.Params.TaskID == nil {
		return nil, &wire.RPCError{Code: wire.RPCInvalidParams, Message: "params.taskId (a string) is required"}
	}
	ctx, owner := r.Context(), ownerOf(ri.identity)
	var err error
	switch ri.method {
	case "tasks/get":
		var t *taskstore.Task
		if t, err = g.tasks.Get(ctx, owner, id); err == nil {
			t, err = g.abandonIfOverdue(ctx, ri, owner, t)
		}
		if err == nil {
			v := pending(t)
			if t.Status == taskstore.StatusCompleted && len(t.ResultRef) > 0 {
				// Stored by the run (claim check): read back and checked
				// on every tasks/get that shows it.
				result, rerr := g.taskResult(ctx, t)
				if rerr != nil {
					return nil, rerr
				}
				v.Result = completeResult(result)
			}
			b, merr := json.Marshal(v)
			if merr == nil {
				return b, nil
			}
			err = merr
		}
	case "tasks/cancel":
		if err = g.tasks.Cancel(ctx, owner, id); err == nil {
			g.releaseSlot(ctx, owner, id)
		}
	case "tasks/update":
		if rpcErr := g.updateTask(ctx, ri, m, owner, id); rpcErr != nil {
			return nil, rpcErr
		}
	}
	switch {
	case errors.Is(err, taskstore.ErrNotFound):
		return nil, &wire.RPCError{Code: wire.RPCInvalidParams, Message: "task not found"}
	case errors.Is(err, taskstore.ErrTampered):
		return nil, g.tampered(ri, id)
	case err != nil:
		g.cfg.Logger.Warn("mcpfn gateway: task store failed", "method", ri.method, "error", err.Error())
		return nil, &wire.RPCError{Code: wire.RPCInternalError, Message: "the task store is unavailable; retry later"}
	}
	return ack, nil
}

// pending is the tasks/get view of t with only the input requests still
// unanswered: a partial tasks/update leaves the task input_required, and
// the client must see what is left (SEP-2663).
func pending(t *taskstore.Task) taskstore.View {
	v := t.Detailed()
	v.Result = completeResult(v.Result)
	if len(v.InputRequests) > 0 && len(t.InputResponses) > 0 {
		left := make(map[string]json.RawMessage, len(v.InputRequests))
		for k, r := range v.InputRequests {
			if _, answered := t.InputResponses[k]; !answered {
				left[k] = r
			}
		}
		v.InputRequests = left
	}
	return v
}

// completeResult is a completed task's CallToolResult as 2026-07-28 puts
// it on the wire: every result carries its resultType, "complete" for a
// finished call, and the extension inlines "the result type of the
// original request" (SEP-2663; its client package validates it). The
// function stores the result as a synchronous call answers it, before the
// go-sdk adds the field; a result that has one keeps it.
func completeResult(r json.RawMessage) json.RawMessage {
	var probe struct {
		ResultType json.RawMessage `json:"resultType"`
	}
	body := bytes.TrimLeft(r, " \t\r\n")
	if len(body) == 0 || body[0] != '{' || json.Unmarshal(body, &probe) != nil || probe.ResultType != nil {
		return r
	}
	rest := bytes.TrimLeft(body[1:], " \t\r\n")
	out := make([]byte, 0, len(r)+24)
	out = append(out, `{"resultType":"complete"`...)
	if rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...)
}

// checkTaskHeaders applies SEP-2243 to the tasks methods (SEP-2663 routes
// them by Mcp-Name = taskId): a header that is sent must match the body,
// and from protocol version 2026-07-28 on both must be sent.
func checkTaskHeaders(h http.Header, method, taskID string) *wire.RPCError {
	required := h.Get("Mcp-Protocol-Version") >= wire.ModernProtocolVersion
	for _, c := range []struct{ header, want string }{{"Mcp-Method", method}, {"Mcp-Name", taskID}} {
		v, sent := h.Get(c.header), len(h.Values(c.header)) > 0
		if (!sent && required) || (sent && strings.TrimSpace(v) != c.want) {
			return &wire.RPCError{Code: codeHeaderMismatch, Message: "the " + c.header + " header is missing or does not match the request body"}
		}
	}
	return nil
}

// missingTasks is the -32021 of a request that needs the extension and did
// not declare it; its data names the capability (SEP-2575).
func missingTasks(msg string) *wire.RPCError {
	return &wire.RPCError{Code: codeMissingCapability, Message: msg,
		Data: map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{TasksExtension: map[string]any{}}}}}
}

// ownerOf is the task owner and cancel-marker owner of a caller: the
// caller key the audit indexes by ("" for an unverified caller, who then
// shares tasks with every other unverified caller: AuthNone).
func ownerOf(id *adapter.Identity) string {
	if id == nil {
		return ""
	}
	return audit.Caller{AuthMethod: id.AuthMethod, Issuer: id.Issuer, Tenant: id.Tenant, Subject: id.Subject}.Key()
}

// startTask is the forwarder's task path for an authorized call: it
// admits the task into a slot of its caller and of the total (a reached
// limit refuses the call: RATE_LIMITED, naming the limit), creates it,
// invokes its first run and stashes the CreateTaskResult for serveTasks. A
// failure answers the call as the failed call it is (an isError result, as
// a synchronous call's), and the task, if written, ends failed.
func (g *Gateway) startTask(ctx context.Context, ri *requestInfo, t *adapter.Tool, function string, env *wire.Envelope, start time.Time) *mcp.CallToolResult {
	// A task is cancelled through its record, and reports progress as its
	// statusMessage: no cancel marker, no stream.
	env.Cancel, env.Stream = nil, nil
	owner := ownerOf(ri.identity)
	id := taskstore.NewID(t.Name())
	f := &forward{g: g, tool: t.Name(), function: function, callID: env.CallID, start: start, delivery: notSent}
	err := g.tasks.Admit(ctx, owner, id, g.taskLimits())
	var limit *taskstore.LimitError
	if errors.As(err, &limit) {
		res := f.refuse(g.limitError(limit, env.CallID), err)
		if g.cfg.Recorder != nil {
			g.recordUnseen(ctx, ri, env, f, "", t.Destructive())
		}
		return res
	}
	var task *taskstore.Task
	storeFailed := false
	if err == nil {
		var params []byte
		if params, err = json.Marshal(env.Params); err == nil && g.payloads != nil && len(params) > g.cfg.ArgumentLimits.Task && len(env.Params.Arguments) > 0 {
			// Too large for the record (and the task's asynchronous
			// Invoke): the record keeps a reference (claimcheck.go).
			var ref *wire.ObjectRef
			if ref, err = g.storeArguments(ctx, t.Name(), env.CallID, env.Params.Arguments); err != nil {
				storeFailed = true
			} else {
				f.args = env.Params.Arguments
				env.Params.Arguments, env.Params.ArgumentsRef, f.argsRef = nil, ref, ref
				params, err = json.Marshal(env.Params)
			}
		}
		if err == nil {
			task, err = g.tasks.Create(ctx, taskstore.NewTask{ID: id, Owner: owner, Tool: t.Name(), Function: function, CallID: env.CallID, Params: params})
		}
		if err != nil {
			g.releaseSlot(ctx, owner, id)
		}
	}
	if err != nil {
		code, msg := adapter.CodeUnavailable, "the gateway cannot record the task right now; retry later"
		switch {
		case errors.Is(err, taskstore.ErrTooLarge):
			code, msg = adapter.CodePayloadTooLarge, "the call's arguments are too large for a task"
		case storeFailed:
			code, msg = adapter.CodeUnavailable, argumentsStoreFailed().Message
		}
		res := f.failure(code, msg, false, err)
		f.end = time.Now()
		if g.cfg.Recorder != nil {
			g.recordUnseen(ctx, ri, env, f, "", t.Destructive())
		}
		return res
	}
	env.Task = &wire.TaskRun{ID: task.ID}
	if res := g.runTask(ctx, ri, t, function, env, start); res != nil {
		return res
	}
	v := task.Created()
	ri.created = &v
	return &mcp.CallToolResult{}
}

// updateTask answers tasks/update: the caller must still hold the scopes
// of the task's tool (from the catalog, by the id's tool), and the update
// that answers the round's last request resumes the task only once it is
// admitted again into a slot. Every refusal is a JSON-RPC error; a nil
// answer is the ack.
func (g *Gateway) updateTask(ctx context.Context, ri *requestInfo, m *taskMessage, owner, id string) *wire.RPCError {
	tool, _ := taskstore.ToolOf(id)
	t := g.tools[tool]
	if t == nil {
		return &wire.RPCError{Code: wire.RPCInvalidParams, Message: "task not found"}
	}
	// Resuming runs the tool again, as the caller: authorized again, as a
	// tools/call is, however the task came to be.
	if denied := authorizeTool(t, ri.identity, ""); denied != nil {
		g.refuseResume(ctx, ri, t, id, denied, nil)
		return &wire.RPCError{Code: wire.RPCInvalidParams, Message: denied.Message, Data: denied.Body()}
	}
	prior, err := g.tasks.Get(ctx, owner, id)
	if err == nil && prior.Completes(m.Params.InputResponses) {
		err = g.tasks.Admit(ctx, owner, id, g.taskLimits())
		var limit *taskstore.LimitError
		if errors.As(err, &limit) {
			e := g.limitError(limit, "")
			g.refuseResume(ctx, ri, t, id, e, err)
			return &wire.RPCError{Code: wire.RPCInternalError, Message: e.Message, Data: e.Body()}
		}
	}
	var (
		task   *taskstore.Task
		resume bool
	)
	if err == nil {
		task, resume, err = g.tasks.Update(ctx, owner, id, m.Params.InputResponses)
	}
	switch {
	case err == nil:
		if resume {
			g.resumeTask(ctx, ri, m, task)
		}
		return nil
	case errors.Is(err, taskstore.ErrTooLarge):
		return &wire.RPCError{Code: wire.RPCInvalidParams, Message: "the input responses are too large for the task"}
	case errors.Is(err, taskstore.ErrNotFound):
		return &wire.RPCError{Code: wire.RPCInvalidParams, Message: "task not found"}
	case errors.Is(err, taskstore.ErrTampered):
		return g.tampered(ri, id)
	}
	g.cfg.Logger.Warn("mcpfn gateway: task store failed", "method", ri.method, "error", err.Error())
	return &wire.RPCError{Code: wire.RPCInternalError, Message: "the task store is unavailable; retry later"}
}

// refuseResume writes the gateway's row of a resume it refused: the round
// the update would have run, under a call id of its own, for the tool the
// catalog names.
func (g *Gateway) refuseResume(ctx context.Context, ri *requestInfo, t *adapter.Tool, id string, e *adapter.Error, cause error) {
	if g.cfg.Recorder == nil {
		return
	}
	env := wire.Envelope{CallID: wire.NewCallID(), MCP: wire.EnvelopeMCP{Method: "tasks/update"}, Task: &wire.TaskRun{ID: id}, SessionID: ri.sessionID,
		Params: wire.EnvelopeParams{Name: t.Name()}}
	now := time.Now()
	f := &forward{g: g, tool: t.Name(), function: g.cfg.Functions[t.Name()], callID: env.CallID, start: now, end: now,
		code: e.Code, public: e, cause: cause, delivery: notSent, error: true}
	g.recordUnseen(ctx, ri, &env, f, "", t.Destructive())
}

// tampered is the answer to a request for a task of the caller's whose
// record does not verify: nothing acts on it, and the operator is told.
func (g *Gateway) tampered(ri *requestInfo, id string) *wire.RPCError {
	g.cfg.Logger.Error("mcpfn gateway: a task record failed its integrity check: it was changed outside the gateway, and is not used",
		"taskId", id, "method", ri.method)
	return &wire.RPCError{Code: wire.RPCInternalError, Message: "the task's record was changed outside the gateway; it is not used"}
}

// taskLimits are the gateway's caps on working tasks: a slot is held at
// most until no run of its task can still be going.
func (g *Gateway) taskLimits() taskstore.Limits {
	return taskstore.Limits{PerOwner: g.cfg.MaxTasksPerCaller, Total: g.cfg.MaxTasks, Hold: g.cfg.TaskRunWindow + maxFunctionRun}
}

// limitError is the RATE_LIMITED of a task refused by a limit: which
// limit, its value and variable, and when to retry.
func (g *Gateway) limitError(l *taskstore.LimitError, callID string) *adapter.Error {
	variable, msg := EnvMaxTasksPerCaller, fmt.Sprintf("this caller already has %d working tasks, the most the gateway runs at once for one caller", l.Max)
	if l.Limit == taskstore.LimitTotal {
		variable, msg = EnvMaxTasks, fmt.Sprintf("the gateway already runs %d working tasks, its limit", l.Max)
	}
	details := map[string]any{"limit": variable, "max": l.Max, "retryAfterSeconds": int(l.RetryAfter.Seconds())}
	if callID != "" {
		details["callId"] = callID
	}
	return adapter.NewError(adapter.CodeRateLimited, msg+" ("+variable+")").WithDetails(details).
		WithHint(fmt.Sprintf("retry once a task has ended (tasks/get shows it); a slot frees at the latest in %s", l.RetryAfter))
}

// releaseSlot frees a task's slots once the gateway itself ended it
// (cancelled, failed). A slot it does not free frees itself (taskstore).
func (g *Gateway) releaseSlot(ctx context.Context, owner, id string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := g.tasks.Release(ctx, owner, id); err != nil {
		g.cfg.Logger.Warn("mcpfn gateway: freeing a task's slot failed; it frees itself when its hold ends", "taskId", id, "error", err.Error())
	}
}

// resumeTask invokes the next round of a task whose input tasks/update
// completed: the same arguments, the round's answers and the sealed state
// the last round left. The tool and its function are the catalog's, for
// the tool the verified record names. The round gets a call id of its own,
// as every synchronous round does: the audit keys a row (and a destructive
// call's at-most-once guard) by call id, and the rows of a task's rounds
// share its taskId.
func (g *Gateway) resumeTask(ctx context.Context, ri *requestInfo, m *taskMessage, task *taskstore.Task) {
	env := wire.Envelope{Version: wire.EnvelopeVersion, CallID: wire.NewCallID(), SessionID: ri.sessionID, Task: &wire.TaskRun{ID: task.ID}}
	pv := m.Params.Meta.ProtocolVersion
	env.MCP = wire.EnvelopeMCP{Era: wire.EraOf(pv), Method: "tools/call", ProtocolVersion: pv, ClientInfo: m.Params.Meta.ClientInfo, JSONRPCID: ri.jsonrpcID}
	t, function := g.tools[task.Tool], g.cfg.Functions[task.Tool]
	err := json.Unmarshal(task.Params, &env.Params)
	if err == nil && env.Params.Name != task.Tool {
		err = fmt.Errorf("the task's params name tool %q, the task %q", env.Params.Name, task.Tool)
	}
	if err == nil {
		env.Params.InputResponses, err = json.Marshal(task.RoundResponses())
		env.Params.RequestState = string(task.RequestState)
	}
	if err != nil || t == nil || function == "" {
		g.abandon(ctx, task.ID, "the gateway cannot resume the task")
		g.releaseSlot(ctx, task.Owner, task.ID)
		return
	}
	if task.Function != function {
		// Redeployed meanwhile: the catalog says which function runs
		// the tool now.
		g.cfg.Logger.Info("mcpfn gateway: the task's tool now runs in another function", "taskId", task.ID, "recorded", task.Function, "function", function)
	}
	g.runTask(ctx, ri, t, function, &env, time.Now())
}

// runTask signs env (naming its task) with a token valid for the task's run
// window and invokes the function asynchronously. A refused invoke ends
// the task failed, frees its slot, and the gateway writes the call's row.
func (g *Gateway) runTask(ctx context.Context, ri *requestInfo, t *adapter.Tool, function string, env *wire.Envelope, start time.Time) *mcp.CallToolResult {
	f := &forward{g: g, tool: t.Name(), function: function, callID: env.CallID, start: start}
	sign := func() (string, error) {
		return g.signer.Sign(calltoken.Call{
			Tool: t.Name(), CallID: env.CallID, Caller: ri.identity, Args: env.Params.Arguments, ArgsDigest: argsDigest(&env.Params),
			Expires: start.Add(g.cfg.TaskRunWindow), Task: env.Task.ID,
			InputResponses: env.Params.InputResponses, RequestState: env.Params.RequestState,
		})
	}
	tok, err := sign()
	var res *mcp.CallToolResult
	if err != nil {
		f.delivery = notSent
		res = f.failure(adapter.CodeInternal, "the gateway cannot sign calls to this tool", false, err)
		f.end = time.Now()
	} else {
		env.CallToken = tok
		header, spanID := forwardTrace(ri.trace)
		env.TraceHeader = header
		payload, _ := json.Marshal(env)
		if g.payloads != nil && len(payload) > g.cfg.ArgumentLimits.Event && len(env.Params.Arguments) > 0 {
			// Too large for an asynchronous Invoke (a record that kept its
			// arguments inline under a raised ArgumentLimits.Task).
			ref, serr := g.storeArguments(ctx, t.Name(), env.CallID, env.Params.Arguments)
			if serr == nil {
				env.Params.Arguments, env.Params.ArgumentsRef = nil, ref
				if env.CallToken, serr = sign(); serr == nil {
					payload, serr = json.Marshal(env)
				}
			}
			if serr != nil {
				res = f.refuse(argumentsStoreFailed().WithDetails(map[string]string{"callId": env.CallID}), serr)
				payload = nil
			}
		}
		if payload != nil {
			res = f.invokeEvent(ctx, ri, payload, header)
		}
		if spanID != "" && g.cfg.Spans != nil {
			g.cfg.Spans.EmitSpan(f.span(ri.trace, spanID, "", env.MCP.ProtocolVersion))
			g.flushSpans(ctx, ri)
		}
	}
	if res == nil {
		return nil
	}
	g.abandon(ctx, env.Task.ID, f.public.Message)
	g.releaseSlot(ctx, ownerOf(ri.identity), env.Task.ID)
	if g.cfg.Recorder != nil {
		g.recordUnseen(ctx, ri, env, f, "", t.Destructive())
	}
	return res
}

// invokeEvent queues the task run (InvocationType Event: Lambda answers 202
// and runs it, retrying on failure). It returns nil once queued, or the
// failure as the call's isError result.
func (f *forward) invokeEvent(ctx context.Context, ri *requestInfo, payload []byte, traceHeader string) *mcp.CallToolResult {
	defer func() { f.end = time.Now() }()
	ictx, cancel := context.WithDeadline(ctx, f.g.forwardDeadline(f.start, ri))
	defer cancel()
	// Counted like every Invoke: per request (a batch's messages share it)
	// and per process.
	release, err := acquire(ictx, ri.invokes, f.g.invokes)
	if err != nil {
		f.throttle, f.delivery = true, notSent
		return f.failure(adapter.CodeRateLimited, "the gateway is at its limit of calls in flight; retry after a short wait", false,
			fmt.Errorf("no invoke slot before the call's deadline (%w)", err))
	}
	defer release()
	out, err := f.g.invoker.Invoke(ictx, &lambda.InvokeInput{
		FunctionName:   &f.function,
		Payload:        payload,
		InvocationType: types.InvocationTypeEvent,
	}, lambda.WithAPIOptions(append(traceOptions(traceHeader), noteReached(&f.reached))...), f.g.resendPolicy(true))
	if err != nil {
		res := f.invokeError(ictx, err)
		if f.reached && f.delivery == notSent {
			f.delivery = maybeRun
		}
		return res
	}
	f.requestID, _ = awsmiddleware.GetRequestIDMetadata(out.ResultMetadata)
	return nil
}

// abandonIfOverdue fails a working task whose run window is over: every run
// Lambda could still start has ended (the event was lost, or every attempt
// crashed before recording an outcome). The gateway writes the call's row.
func (g *Gateway) abandonIfOverdue(ctx context.Context, ri *requestInfo, owner string, t *taskstore.Task) (*taskstore.Task, error) {
	if t.Status != taskstore.StatusWorking || !g.now().After(t.LastUpdatedAt.Add(g.cfg.TaskRunWindow+maxFunctionRun)) {
		return t, nil
	}
	const msg = "the task's function did not record an outcome within its run window"
	if !g.abandon(ctx, t.ID, msg) {
		return g.tasks.Get(ctx, owner, t.ID) // it changed meanwhile
	}
	g.releaseSlot(ctx, owner, t.ID)
	if tool := g.tools[t.Tool]; g.cfg.Recorder != nil && tool != nil {
		// The lost round's call id is not in the task (a resumed round has
		// its own): the row has one of its own, and the task's id. Its
		// tool is the verified record's, its function the catalog's.
		env := wire.Envelope{CallID: wire.NewCallID(), MCP: wire.EnvelopeMCP{Method: "tools/call"}, Task: &wire.TaskRun{ID: t.ID}}
		_ = json.Unmarshal(t.Params, &env.Params)
		env.Params.Name = tool.Name()
		f := &forward{g: g, tool: tool.Name(), function: g.cfg.Functions[tool.Name()], callID: env.CallID, start: t.LastUpdatedAt, end: g.now(),
			code: adapter.CodeTimeout, public: adapter.NewError(adapter.CodeTimeout, msg), delivery: notSent, error: true}
		g.recordUnseen(ctx, ri, &env, f, "", tool.Destructive())
	}
	return g.tasks.Get(ctx, owner, t.ID)
}

// abandon records task id failed (if it is still working) with msg, and
// reports whether it did.
func (g *Gateway) abandon(ctx context.Context, id, msg string) bool {
	err := g.tasks.Abandon(context.WithoutCancel(ctx), id, taskstore.RPCError{Code: wire.RPCInternalError, Message: msg})
	if err != nil && !errors.Is(err, taskstore.ErrNotWorking) && !errors.Is(err, taskstore.ErrCancelled) {
		g.cfg.Logger.Warn("mcpfn gateway: recording a task failed", "taskId", id, "error", err.Error())
	}
	return err == nil
}

// requestKey is the cancel-marker key of a JSON-RPC id: its compact JSON,
// so 7 and "7" are different requests.
func requestKey(id json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, id) != nil {
		return string(id)
	}
	return b.String()
}

func writeRPCResult(w http.ResponseWriter, id, result json.RawMessage) {
	b, _ := json.Marshal(wire.NewRPCResponse(id, result, nil))
	writeJSON(w, http.StatusOK, b)
}

func writeJSON(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// toolCallNeedsTasks is the -32021 of a tools/call of a task-required tool
// from a request that did not declare the extension.
func toolCallNeedsTasks(tool string) *jsonrpc.Error {
	e := missingTasks("tool " + tool + " runs only as a task: declare the " + TasksExtension + " extension in the request's _meta clientCapabilities")
	data, _ := json.Marshal(e.Data)
	return &jsonrpc.Error{Code: int64(e.Code), Message: e.Message, Data: data}
}

// taskFromRound goes on with a synchronous round whose function asked to
// run the rest as a task (adapter.StartTask, a TaskAfterInput tool): the
// same round, answers and sealed state included, becomes the task's first
// run, under a call id of its own (the round has its row). A client that
// did not declare the extension cannot take the task: -32021.
func (g *Gateway) taskFromRound(ctx context.Context, ri *requestInfo, t *adapter.Tool, function string, env *wire.Envelope) (*mcp.CallToolResult, error) {
	if !ri.declaresTasks {
		return nil, toolCallNeedsTasks(t.Name())
	}
	env.CallID = wire.NewCallID()
	return g.startTask(ctx, ri, t, function, env, time.Now()), nil
}

// taskResult is the result a task's run stored, resolved as a synchronous
// call's is. The reference is the run's, so untrusted: it must name the
// results of the tool the sealed record names.
func (g *Gateway) taskResult(ctx context.Context, t *taskstore.Task) (json.RawMessage, *wire.RPCError) {
	var ref wire.ObjectRef
	var res *mcp.CallToolResult
	err := json.Unmarshal(t.ResultRef, &ref)
	if err == nil {
		res, err = g.resolveResult(ctx, &ref, resultPrefix(t.Tool, ""))
	}
	var b []byte
	if err == nil {
		b, err = json.Marshal(res)
	}
	if err != nil {
		re := resolveFailure(err)
		level := slog.LevelWarn
		if re.code == adapter.CodeInternal {
			level = slog.LevelError
		}
		g.cfg.Logger.Log(ctx, level, "mcpfn gateway: a task's stored result cannot be served", "taskId", t.ID, "key", ref.Key, "error", err.Error())
		return nil, &wire.RPCError{Code: wire.RPCInternalError, Message: "the task's result cannot be served: " + re.msg,
			Data: map[string]any{"error": string(re.code), "retryable": re.code == adapter.CodeUnavailable && claimcheck.KindOf(err) != claimcheck.Missing}}
	}
	return b, nil
}
