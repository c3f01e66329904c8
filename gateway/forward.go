package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/calltoken"
	"github.com/mcpfn/mcpfn/wire"
)

// forwarder returns the tools/call handler of one catalog tool: it builds the
// envelope, invokes the tool's function synchronously and turns the answer
// (or the failure to get one) into the call's result.
func (g *Gateway) forwarder(t *adapter.Tool, function string) mcp.ToolHandler {
	name := t.Name()
	// A destructive, non-idempotent tool whose outcome is unknown (the
	// function crashed or timed out mid-call) must not be retried blindly:
	// the first attempt may have taken effect.
	unsafeRetry := t.Destructive() && !t.Idempotent()
	return func(ctx context.Context, req *mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
		ri, _ := ctx.Value(requestInfoKey{}).(*requestInfo)
		if ri == nil {
			ri = &requestInfo{}
		}
		p := req.Params
		// This call's trace position: the request's, or the caller's W3C
		// context (a copy: the messages of a batch each have their own).
		trace, link := callTrace(ri, p.Meta)
		if trace != ri.trace {
			cri := *ri
			cri.trace = trace
			ri = &cri
		}
		pv := req.ProtocolVersion()
		env := wire.Envelope{
			Version: wire.EnvelopeVersion,
			CallID:  wire.NewCallID(),
			Params: wire.EnvelopeParams{
				Name:         p.Name,
				Arguments:    p.Arguments,
				Meta:         p.Meta,
				RequestState: p.RequestState,
			},
			MCP: wire.EnvelopeMCP{
				Era:             wire.EraOf(pv),
				Method:          "tools/call",
				ProtocolVersion: pv,
				JSONRPCID:       ri.jsonrpcID,
			},
			SessionID: ri.sessionID,
		}
		defer func() { res = withCallID(res, env.CallID) }()
		if ci := req.ClientInfo(); ci != nil {
			env.MCP.ClientInfo = &wire.ClientInfo{Name: ci.Name, Title: ci.Title, Version: ci.Version}
		}
		if len(p.InputResponses) > 0 {
			if b, err := json.Marshal(p.InputResponses); err == nil {
				env.Params.InputResponses = b
			}
		}
		if t.TaskSupport() == adapter.TaskRequired && !ri.declaresTasks {
			return nil, toolCallNeedsTasks(name)
		}
		env.Cancel = g.cancelMarker(ri, &env)
		rl := g.relayFor(ctx, ri, req)
		if rl != nil {
			env.Stream = rl.request
		}
		start := time.Now()
		// Authorization at the endpoint: a caller without the tool's
		// scopes is refused here, its function is never invoked, and the
		// gateway writes the call's row.
		if denied := authorizeTool(t, ri.identity, env.CallID); denied != nil {
			f := &forward{g: g, tool: name, function: function, callID: env.CallID, start: start, end: time.Now(),
				code: denied.Code, public: denied, delivery: notSent, error: true}
			if g.cfg.Recorder != nil {
				g.recordUnseen(ctx, ri, &env, f, "", t.Destructive())
			}
			return errorResult(denied), nil
		}
		if ri.declaresTasks && t.TaskSupport() != adapter.TaskForbidden && !t.TaskAfterInput() {
			return g.startTask(ctx, ri, t, function, &env, start), nil
		}
		f := &forward{g: g, tool: name, function: function, callID: env.CallID, unsafeRetry: unsafeRetry, start: start, relay: rl, args: p.Arguments}
		// The verified caller travels only inside the call token, which
		// binds it to this call id, tool, function and arguments. Client
		// info, the session id and every header stay attribution.
		sign := func() (string, error) {
			return g.signer.Sign(calltoken.Call{
				Tool: name, CallID: env.CallID, Caller: ri.identity, Args: env.Params.Arguments, ArgsDigest: argsDigest(&env.Params),
				Expires: g.forwardDeadline(start, ri), InputResponses: env.Params.InputResponses, RequestState: env.Params.RequestState,
			})
		}
		tok, err := sign()
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the gateway cannot sign calls to this tool"}
		}
		env.CallToken = tok
		header, spanID := forwardTrace(ri.trace)
		env.TraceHeader = header
		payload, err := json.Marshal(&env)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "the call's params cannot be forwarded: " + err.Error()}
		}
		if g.payloads != nil && len(payload) > g.cfg.ArgumentLimits.Invoke && len(p.Arguments) > 0 {
			// Too large for one Invoke: the arguments go to the payloads
			// bucket and the envelope names them (claimcheck.go).
			ref, serr := g.storeArguments(ctx, name, env.CallID, p.Arguments)
			if serr != nil {
				res := f.refuse(argumentsStoreFailed().WithDetails(map[string]string{"callId": env.CallID}), serr)
				if g.cfg.Recorder != nil {
					g.recordUnseen(ctx, ri, &env, f, "", t.Destructive())
				}
				return res, nil
			}
			env.Params.Arguments, env.Params.ArgumentsRef, f.argsRef = nil, ref, ref
			if env.CallToken, err = sign(); err != nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the gateway cannot sign calls to this tool"}
			}
			if payload, err = json.Marshal(&env); err != nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "the call's params cannot be forwarded: " + err.Error()}
			}
		}
		if env.MCP.Era == wire.EraModern {
			f.cancelOnGone = env.Cancel
		}
		res, rpcErr := f.invoke(ctx, ri, payload, header)
		if f.resultRef != nil && rpcErr == nil && f.public == nil {
			res = f.resolve(ctx, resultPrefix(name, env.CallID))
		}
		if spanID != "" && g.cfg.Spans != nil {
			g.cfg.Spans.EmitSpan(f.span(ri.trace, spanID, link, pv))
			g.flushSpans(ctx, ri)
		}
		if (f.delivery != answered || f.undelivered) && g.cfg.Recorder != nil {
			g.recordUnseen(ctx, ri, &env, f, spanID, t.Destructive())
		}
		if f.startTask {
			return g.taskFromRound(ctx, ri, t, function, &env)
		}
		if rpcErr != nil {
			return nil, rpcErr
		}
		return res, nil
	}
}

// forwardDeadline is when a call forwarded at start must have its answer:
// InvokeTimeout, cut short early enough to still answer before the gateway's
// own invocation ends. The call token expires then too.
func (g *Gateway) forwardDeadline(start time.Time, ri *requestInfo) time.Time {
	deadline := start.Add(g.cfg.InvokeTimeout)
	if !ri.deadline.IsZero() {
		if d := ri.deadline.Add(-g.cfg.DeadlineReserve); d.Before(deadline) {
			deadline = d
		}
	}
	return deadline
}

// forward is one forwarded call's bookkeeping.
type forward struct {
	g           *Gateway
	tool        string
	function    string
	callID      string
	unsafeRetry bool
	start, end  time.Time

	requestID              string
	throttle, error, fault bool
	code                   adapter.Code
	// delivery says whether the function saw the call, which decides the
	// gateway's audit row; public and cause are what failure reported.
	delivery delivery
	reached  bool // an attempt may have reached the function (noteReached)
	// startTask: the function asked to run the call as a task (StartTask).
	startTask bool
	public    *adapter.Error
	cause     error
	// relay, when set, streams the answer (stream.go).
	relay *relay
	// cancelOnGone is the marker of a 2026-07-28 call, written when its
	// client closes the stream (cancel.go).
	cancelOnGone *wire.CancelMarker
	// The claim check (claimcheck.go): args are the call's arguments as
	// received (for the gateway's row), argsRef where they were stored;
	// resultRef is the stored result the function answered with, and
	// undelivered says the gateway could not serve it (its row says why).
	args        json.RawMessage
	argsRef     *wire.ObjectRef
	resultRef   *wire.ObjectRef
	undelivered bool
}

// resolve answers the stored result the function answered with, or the
// failure to: the function ran and answered, so a destructive tool's call
// took effect whatever happens here.
func (f *forward) resolve(ctx context.Context, prefix string) *mcp.CallToolResult {
	res, err := f.g.resolveResult(ctx, f.resultRef, prefix)
	f.end = time.Now()
	if err == nil {
		return res
	}
	re := resolveFailure(err)
	f.undelivered, f.error = true, true
	if re.code == adapter.CodeInternal {
		f.g.cfg.Logger.Error("mcpfn gateway: a stored result failed its check and was not served",
			"tool", f.tool, "function", f.function, "callId", f.callID, "key", f.resultRef.Key, "error", err.Error())
	}
	out := f.failure(re.code, re.msg, true, err)
	if !f.unsafeRetry && re.code == adapter.CodeInternal {
		// Not the caller's to retry: the function's answer is wrong.
		f.public.Retryable = false
	}
	return out
}

// invoke calls the function and maps every outcome. It returns exactly one
// of a result or a JSON-RPC error.
func (f *forward) invoke(ctx context.Context, ri *requestInfo, payload []byte, traceHeader string) (*mcp.CallToolResult, *jsonrpc.Error) {
	defer func() { f.end = time.Now() }()
	deadline := f.g.forwardDeadline(f.start, ri)
	if !deadline.After(f.start) {
		f.delivery = notSent
		return f.failure(adapter.CodeTimeout, "the gateway had no time left to call the tool", false, errors.New("no time left before the gateway's deadline")), nil
	}
	ictx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	release, err := acquire(ictx, ri.invokes, f.g.invokes)
	if err != nil {
		f.throttle, f.delivery = true, notSent
		return f.failure(adapter.CodeRateLimited, "the gateway is at its limit of calls in flight; retry after a short wait", false,
			fmt.Errorf("no invoke slot before the call's deadline (%w)", err)), nil
	}
	defer release()
	if f.cancelOnGone != nil {
		// The client's closing the stream cancels the call: the Invoke
		// outlives the request, the function learns of the cancel from
		// its marker and answers, and that answer ends the call.
		defer f.g.cancelWhenGone(ctx, f.cancelOnGone, f.callID)()
		var stop context.CancelFunc
		ictx, stop = context.WithDeadline(context.WithoutCancel(ctx), deadline)
		defer stop()
	}

	if f.relay != nil {
		return f.invokeStream(ictx, payload, traceHeader)
	}
	out, err := f.g.invoker.Invoke(ictx, &lambda.InvokeInput{
		FunctionName:   &f.function,
		Payload:        payload,
		InvocationType: types.InvocationTypeRequestResponse,
		// ClientContext stays unset: the envelope carries everything, and
		// client context is capped at 3,583 bytes and dropped by sam local.
	}, f.invokeOptions(traceHeader)...)
	if err != nil {
		return f.unanswered(ictx, err), nil
	}
	f.requestID, _ = awsmiddleware.GetRequestIDMetadata(out.ResultMetadata)
	if out.FunctionError != nil {
		f.delivery = maybeRun
		return f.functionError(*out.FunctionError, out.Payload), nil
	}
	return f.decodeAnswer(out.Payload)
}

// invokeOptions are the options of every Invoke of the forward: its trace
// header, the note that an attempt reached Lambda, its resend policy.
func (f *forward) invokeOptions(traceHeader string) []func(*lambda.Options) {
	return []func(*lambda.Options){
		lambda.WithAPIOptions(append(traceOptions(traceHeader), noteReached(&f.reached), payloadWithoutWriteTo)...),
		f.g.resendPolicy(f.unsafeRetry),
	}
}

// unanswered maps an Invoke that got no answer (invokeError); when the last
// attempt was refused, an earlier one may still have run.
func (f *forward) unanswered(ctx context.Context, err error) *mcp.CallToolResult {
	res := f.invokeError(ctx, err)
	if f.reached && f.delivery == notSent {
		f.delivery = maybeRun
	}
	return res
}

// decodeAnswer turns the function's answer (an envelope response) into
// the call's result or JSON-RPC error.
func (f *forward) decodeAnswer(payload []byte) (*mcp.CallToolResult, *jsonrpc.Error) {
	// One pass: the envelope response with its result decoded as the MCP
	// CallToolResult it must be.
	var resp struct {
		Version   string              `json:"mcpfn"`
		Result    *mcp.CallToolResult `json:"result"`
		ResultRef *wire.ObjectRef     `json:"resultRef"`
		Error     *wire.RPCError      `json:"error"`
		StartTask bool                `json:"startTask"`
	}
	err := json.Unmarshal(payload, &resp)
	if err == nil && resp.Version != "" && resp.StartTask {
		f.startTask = true // the forwarder goes on with the task
		return nil, nil
	}
	if err == nil && resp.Version != "" && resp.ResultRef != nil && resp.Result == nil && resp.Error == nil {
		// Stored (the claim check): the forwarder resolves it.
		f.resultRef = resp.ResultRef
		return &mcp.CallToolResult{}, nil
	}
	if err != nil || resp.Version == "" || (resp.Result == nil && resp.Error == nil) {
		f.error = true
		if e := rpcErrorAnswer(payload); resp.Version == "" && e != nil {
			// The function could not recognise the envelope (it nests
			// deeper than it decodes) and answered in JSON-RPC: a
			// protocol failure it reports, passed on as such.
			return nil, e
		}
		return f.failure(adapter.CodeInternal, "the tool function gave an answer the gateway cannot read", false,
			fmt.Errorf("function %s answered %d bytes that are not an mcpfn envelope response with a CallToolResult (%v)", f.function, len(payload), err)), nil
	}
	if resp.Error != nil {
		// A protocol failure the function reports (unknown tool, malformed
		// params): a JSON-RPC error to the client, as the function meant.
		f.error = true
		e := &jsonrpc.Error{Code: int64(resp.Error.Code), Message: resp.Error.Message}
		if resp.Error.Data != nil {
			e.Data, _ = json.Marshal(resp.Error.Data)
		}
		return nil, e
	}
	res := resp.Result
	if res.IsError {
		f.error = true
	}
	return res, nil
}

// invokeError maps an Invoke that got no answer from the function.
func (f *forward) invokeError(ctx context.Context, err error) *mcp.CallToolResult {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		f.requestID = re.ServiceRequestID()
	}
	// Unless the error proves otherwise (below), the request may have
	// reached the function.
	f.delivery = maybeRun
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		f.fault = true
		return f.failure(adapter.CodeTimeout, "the tool did not answer in time", true, err)
	case errors.Is(err, context.Canceled):
		f.fault = true
		return f.failure(adapter.CodeUnavailable, "the call was cancelled before the tool answered", true, err)
	}
	var tooMany *types.TooManyRequestsException
	status := 0
	if re != nil {
		status = re.HTTPStatusCode()
	}
	if status >= 400 && status < 500 {
		// Lambda refused the request (throttled, not found, denied, too
		// large): the function never saw it.
		f.delivery = notSent
	}
	switch {
	case errors.As(err, &tooMany) || status == http.StatusTooManyRequests:
		f.delivery = notSent
		f.throttle = true
		// Lambda refused before running anything: always safe to retry.
		return f.failure(adapter.CodeRateLimited, "the tool is busy (its function is throttled); retry after a short wait", false, err)
	case status >= 500:
		// Lambda had the request: the function may have run.
		f.fault = true
		return f.failure(adapter.CodeUnavailable, "the tool is unavailable right now; retry later", true, err)
	case status == http.StatusConflict:
		// ResourceConflictException: the function is being updated.
		f.fault = true
		return f.failure(adapter.CodeUnavailable, "the tool is being updated; retry shortly", false, err)
	case status == http.StatusRequestEntityTooLarge:
		f.error = true
		return f.failure(adapter.CodePayloadTooLarge, "the call's arguments are too large for the tool's function", false, err)
	case status >= 400:
		// Not found, access denied, invalid parameters: the gateway's
		// configuration is wrong, and retrying changes nothing.
		f.error = true
		return f.failure(adapter.CodeInternal, "the gateway cannot reach this tool's function", false, err)
	}
	// No HTTP answer at all: a connection never made sent nothing; a reset
	// may or may not have reached Lambda.
	f.fault = true
	if provenUnrun(err) == aws.TrueTernary {
		f.delivery = notSent
		return f.failure(adapter.CodeUnavailable, "the tool is unavailable right now; retry later", false, err)
	}
	return f.failure(adapter.CodeUnavailable, "the tool is unavailable right now; retry later", true, err)
}

// functionError maps X-Amz-Function-Error: the function ran and did not
// answer with an envelope response (it crashed, ran out of memory or time,
// or its runtime returned an error).
func (f *forward) functionError(kind string, payload []byte) *mcp.CallToolResult {
	var fe struct {
		ErrorType    string `json:"errorType"`
		ErrorMessage string `json:"errorMessage"`
	}
	_ = json.Unmarshal(payload, &fe)
	raw := fmt.Errorf("function %s: %s function error %s: %s", f.function, kind, fe.ErrorType, fe.ErrorMessage)
	if strings.Contains(fe.ErrorType, "Timedout") || strings.Contains(strings.ToLower(fe.ErrorMessage), "timed out") {
		f.fault = true
		return f.failure(adapter.CodeTimeout, "the tool did not finish in time", true, raw)
	}
	f.error = true
	if kind == "Handled" {
		// The function's runtime returned an error on purpose; the mcpfn
		// adapter never does (it answers every failure in the envelope), so
		// this function is not an mcpfn function or is misconfigured.
		return f.failure(adapter.CodeInternal, "the tool failed", false, raw)
	}
	// Unhandled: the execution environment crashed. Lambda replaces it, so
	// a retry usually meets a healthy one.
	return f.failure(adapter.CodeUnavailable, "the tool failed unexpectedly; retry later", true, raw)
}

// failure builds the isError tool result the model reads, in the adapter's
// error body shape, and logs the raw cause (never shown to the caller: it
// can name functions, accounts and endpoints). ambiguous says the function
// may have run.
func (f *forward) failure(code adapter.Code, msg string, ambiguous bool, cause error) *mcp.CallToolResult {
	f.code = code
	e := adapter.NewError(code, msg).WithDetails(map[string]string{"callId": f.callID})
	if ambiguous && f.unsafeRetry && e.Retryable {
		e.Retryable = false
		e.Hint = "this tool is destructive and the call may have taken effect: check before calling it again"
	}
	f.public, f.cause = e, cause
	f.g.cfg.Logger.Warn("mcpfn gateway: forwarded call failed",
		"tool", f.tool, "function", f.function, "callId", f.callID, "lambdaRequestId", f.requestID,
		"code", string(code), "retryable", e.Retryable, "error", cause.Error())
	return errorResult(e)
}

// refuse is failure with the error built by the caller (a limit's, with
// its own details): the call was never sent.
func (f *forward) refuse(e *adapter.Error, cause error) *mcp.CallToolResult {
	f.code, f.public, f.cause, f.throttle, f.delivery = e.Code, e, cause, e.Code == adapter.CodeRateLimited, notSent
	f.end = time.Now()
	f.g.cfg.Logger.Warn("mcpfn gateway: call refused",
		"tool", f.tool, "function", f.function, "callId", f.callID, "code", string(e.Code), "error", cause.Error())
	return errorResult(e)
}

// errorResult is the isError tool result the model reads, in the error
// body a function writes for failures inside it.
func errorResult(e *adapter.Error) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: e.Body().Text()}}}
}

// span is the gateway's X-Ray subsegment for this forward: a child of the
// gateway's own trace position, and the parent the function's segment names.
func (f *forward) span(t wire.Trace, id, link, protocolVersion string) audit.Span {
	outcome := "ok"
	ann := map[string]any{"tool": f.tool, "call_id": f.callID}
	if f.code != "" {
		ann["error_code"] = string(f.code)
	}
	if f.error || f.fault || f.throttle {
		outcome = "error"
	}
	ann["outcome"] = outcome
	md := map[string]any{"function": f.function, "operation": "lambda:Invoke"}
	if f.relay != nil {
		md["operation"] = "lambda:InvokeWithResponseStream"
	}
	if f.requestID != "" {
		md["lambdaRequestId"] = f.requestID
	}
	attrs := map[string]string{
		"mcp.method.name":       "tools/call",
		"gen_ai.tool.name":      f.tool,
		"gen_ai.operation.name": "execute_tool",
		"faas.invoked_name":     f.function,
		"faas.invoked_provider": "aws",
		"mcpfn.call.id":         f.callID,
		"mcpfn.outcome":         outcome,
	}
	if protocolVersion != "" {
		attrs["mcp.protocol.version"] = protocolVersion
	}
	if f.code != "" {
		attrs["error.type"] = string(f.code)
	}
	if f.requestID != "" {
		attrs["aws.request_id"] = f.requestID
	}
	return audit.Span{
		TraceID: t.Root, ID: id, ParentID: t.Parent, Name: f.function,
		Start: f.start, End: f.end,
		Throttle: f.throttle, Error: f.error || f.throttle, Fault: f.fault,
		Annotations: ann,
		Metadata:    map[string]map[string]any{"mcpfn": md},
		Kind:        audit.SpanClient,
		Attributes:  attrs,
		Link:        link,
	}
}

// flushSpans exports a buffering emitter's spans (OpenTelemetry) before the
// call is answered: on Lambda the gateway may be frozen right after. The
// flush survives the caller going away but not the gateway's invocation.
func (g *Gateway) flushSpans(ctx context.Context, ri *requestInfo) {
	fctx := context.WithoutCancel(ctx)
	if !ri.deadline.IsZero() {
		var cancel context.CancelFunc
		fctx, cancel = context.WithDeadline(fctx, ri.deadline.Add(-g.cfg.DeadlineReserve/2))
		defer cancel()
	}
	_ = audit.FlushSpans(fctx, g.cfg.Spans, 2*time.Second)
}

// traceOptions put the forward's trace header on the Invoke request, and
// take out the SDK's recursion-detection step, which would otherwise copy
// _X_AMZN_TRACE_ID (shared by concurrent invocations on Lambda Managed
// Instances) onto a request that has no header of its own.
func traceOptions(header string) []func(*middleware.Stack) error {
	opts := []func(*middleware.Stack) error{removeRecursionDetection}
	if header != "" {
		opts = append(opts, smithyhttp.SetHeaderValue("X-Amzn-Trace-Id", header))
	}
	return opts
}

// payloadWithoutWriteTo hides the payload's io.WriterTo from net/http. The
// SDK closes a request's body as soon as the response's headers arrive, and
// its body wrapper's WriteTo answers io.EOF once closed: when the headers
// come while net/http's write loop is still making its last read of the
// body (a streamed answer whose first chunk comes at once), io.Copy reports
// that EOF as an error, the write loop closes the connection, and the
// answer is cut off mid-stream — a call the function answered would be
// reported as failed. Read on a closed body answers a plain EOF, which
// io.Copy takes for the end. Seeking stays (retries rewind the payload).
func payloadWithoutWriteTo(s *middleware.Stack) error {
	return s.Build.Add(middleware.BuildMiddlewareFunc("mcpfnPayloadWithoutWriteTo",
		func(ctx context.Context, in middleware.BuildInput, next middleware.BuildHandler) (middleware.BuildOutput, middleware.Metadata, error) {
			if req, ok := in.Request.(*smithyhttp.Request); ok {
				if body, ok := req.GetStream().(io.ReadSeeker); ok {
					r, err := req.SetStream(struct{ io.ReadSeeker }{body})
					if err != nil {
						return middleware.BuildOutput{}, middleware.Metadata{}, err
					}
					in.Request = r
				}
			}
			return next.HandleBuild(ctx, in)
		}), middleware.After)
}

func removeRecursionDetection(s *middleware.Stack) error {
	if _, ok := s.Build.Get((&awsmiddleware.RecursionDetection{}).ID()); ok {
		_, err := s.Build.Remove((&awsmiddleware.RecursionDetection{}).ID())
		return err
	}
	return nil
}

// rpcErrorAnswer is the error of a JSON-RPC error response, nil for
// anything else.
func rpcErrorAnswer(payload []byte) *jsonrpc.Error {
	var r wire.RPCResponse
	if json.Unmarshal(payload, &r) != nil || r.JSONRPC != "2.0" || r.Error == nil || r.Error.Code == 0 {
		return nil
	}
	return &jsonrpc.Error{Code: int64(r.Error.Code), Message: r.Error.Message}
}
