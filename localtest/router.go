package localtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/mcpfn/mcpfn/internal/iam"
	"github.com/mcpfn/mcpfn/internal/localonly"
	"github.com/mcpfn/mcpfn/wire"
)

// invokePrefix is the Lambda Invoke API path, as served by Lambda and by
// `sam local start-lambda`: /2015-03-31/functions/{name}/invocations.
const invokePrefix = "/2015-03-31/functions/"

// streamInvokePrefix is InvokeWithResponseStream's path:
// /2021-11-15/functions/{name}/response-streaming-invocations.
const streamInvokePrefix = "/2021-11-15/functions/"

// maxPayload is Lambda's limit on a synchronous request payload,
// maxAsyncPayload on an asynchronous one.
const (
	maxPayload      = 6 << 20
	maxAsyncPayload = 1 << 20
)

// SettlePath is the local-only operation of the Invoke API that answers 204
// once the stack is settled ([Stack.Settle]): every invoke answered and every
// function's work after its answer — its final audit rows — done. A test
// driving `mcpfn local` from another process POSTs to it before reading the
// audit table.
const SettlePath = "/mcpfn-local/settle"

func (rt router) settle(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		lambdaError(w, http.StatusMethodNotAllowed, "InvalidRequestContentException", "User", "settle takes POST")
		return
	}
	if err := rt.s.Settle(r.Context()); err != nil {
		lambdaError(w, http.StatusServiceUnavailable, "ServiceException", "Service", "settle: "+err.Error())
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// router is the Lambda Invoke API in front of the emulator pools. It speaks
// the wire format the AWS SDK expects: error responses carry
// X-Amzn-ErrorType and a JSON body with "Type" and "message", function
// errors are a 200 with X-Amz-Function-Error.
type router struct{ s *Stack }

func (rt router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	reqID := uuid.NewString()
	w.Header().Set("X-Amzn-RequestId", reqID)
	if status, msg := rt.refuse(r); status != 0 {
		lambdaError(w, status, "AccessDeniedException", "User", msg)
		return
	}
	if id, ok := strings.CutPrefix(r.URL.Path, localStreamPrefix); ok {
		rt.s.streams.receive(w, r, id)
		return
	}
	if r.URL.Path == SettlePath {
		rt.settle(w, r)
		return
	}
	name, streaming, ok := invokePath(r.URL.Path)
	if !ok {
		lambdaError(w, http.StatusNotFound, "UnknownOperationException", "User", "unknown operation "+r.Method+" "+r.URL.Path)
		return
	}
	if r.Method != http.MethodPost {
		lambdaError(w, http.StatusMethodNotAllowed, "InvalidRequestContentException", "User", "Invoke takes POST")
		return
	}
	body, err := readLimited(r, maxPayload)
	if err != nil {
		lambdaError(w, http.StatusRequestEntityTooLarge, "RequestTooLargeException", "User", fmt.Sprintf("Request must be smaller than %d bytes for the InvokeFunction operation", maxPayload))
		return
	}
	// As Lambda: the signature, then the caller's IAM and the function's
	// resource-based policy, before anything about the function is told.
	id, aerr := rt.s.iam.auth.Authenticate(r, body, "lambda")
	if aerr != nil {
		lambdaError(w, http.StatusForbidden, aerr.Code, "User", aerr.Message)
		return
	}
	if req, d := rt.s.iam.auth.Decide(id, "lambda:InvokeFunction", functionARN(name), nil); d.Result != iam.Allowed {
		msg := d.Message(req)
		rt.s.iam.denied("lambda", id.Name, "lambda:InvokeFunction", functionARN(name), msg)
		lambdaError(w, http.StatusForbidden, "AccessDeniedException", "User", msg)
		return
	}
	fn := rt.s.functions[name]
	if fn == nil {
		lambdaError(w, http.StatusNotFound, "ResourceNotFoundException", "User", "Function not found: "+functionARN(name))
		return
	}
	if q := r.URL.Query().Get("Qualifier"); q != "" && q != "$LATEST" {
		lambdaError(w, http.StatusNotFound, "ResourceNotFoundException", "User", "Function not found: "+functionARN(name)+":"+q)
		return
	}
	limit, async := int64(maxPayload), false
	switch t := r.Header.Get("X-Amz-Invocation-Type"); {
	case t == "" || t == "RequestResponse":
	case t == "Event" && !streaming:
		limit, async = maxAsyncPayload, true
	default:
		// DryRun has no local use yet; answering it as if it worked
		// would hide that.
		lambdaError(w, http.StatusBadRequest, "InvalidParameterValueException", "User", "the local stack supports only InvocationType RequestResponse and Event, not "+t)
		return
	}
	if cc := r.Header.Get("X-Amz-Client-Context"); cc != "" {
		if _, err := wire.DecodeClientContext(cc); err != nil {
			lambdaError(w, http.StatusBadRequest, "InvalidRequestContentException", "User", "Client context must be a valid Base64-encoded JSON object: "+err.Error())
			return
		}
	}
	if int64(len(body)) > limit {
		lambdaError(w, http.StatusRequestEntityTooLarge, "RequestTooLargeException", "User", fmt.Sprintf("Request must be smaller than %d bytes for the InvokeFunction operation", limit))
		return
	}
	if len(body) == 0 {
		// Lambda hands a function "{}" when an Invoke carries no payload
		// (the emulator would pass the empty body on, which no runtime's
		// JSON decoder accepts).
		body = []byte("{}")
	}
	if !json.Valid(body) {
		lambdaError(w, http.StatusBadRequest, "InvalidRequestContentException", "User", "Could not parse request body into json")
		return
	}
	h := r.Header.Clone()
	h.Set("X-Amzn-RequestId", reqID)
	if async {
		rt.s.async.enqueue(fn, body, h, reqID)
		w.WriteHeader(http.StatusAccepted)
		return
	}

	fn.invocations.Add(1)
	e, err := fn.acquire(r.Context())
	if errors.Is(err, errBusy) {
		w.Header().Set("Retry-After", "1")
		lambdaErrorReason(w, http.StatusTooManyRequests, "TooManyRequestsException", "User", "Rate Exceeded.", "ReservedFunctionConcurrentInvocationLimitExceeded")
		return
	}
	if err != nil {
		rt.s.logRouter("function", name, "requestId", reqID, "error", "starting an emulator: "+err.Error())
		lambdaError(w, http.StatusInternalServerError, "ServiceException", "Service", "the local stack could not start an execution environment: "+err.Error())
		return
	}
	if streaming {
		rt.serveStream(r.Context(), w, fn, e, body, h)
		return
	}
	out, fnErr, err := rt.call(r.Context(), fn, e, body, h)
	if err != nil {
		lambdaError(w, http.StatusInternalServerError, "ServiceException", "Service", err.Error())
		return
	}
	w.Header().Set("X-Amz-Executed-Version", "$LATEST")
	w.Header().Set("Content-Type", "application/json")
	if fnErr != "" {
		w.Header().Set("X-Amz-Function-Error", fnErr)
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
}

// call runs one invoke on e (acquired from fn's pool, released by call)
// and returns the payload; with a function error its kind (Unhandled) and
// Lambda's error payload. An error is the local stack failing (logged).
func (rt router) call(ctx context.Context, fn *function, e *emulator, body []byte, h http.Header) (out []byte, fnErr string, err error) {
	reqID := h.Get("X-Amzn-RequestId")
	// The answer comes as on Lambda: at the runtime's response, while the
	// environment stays busy until every extension is done with the
	// invoke (then release returns it to the pool); errors come with the
	// emulator's own answer.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Duration(fn.spec.Timeout)*time.Second+5*time.Second)
	defer cancel()
	inv, err := e.invoke(ctx, body, h, func(*invocation) { fn.release(e) })
	var status int
	if err == nil {
		status, out, err = inv.answer()
	}
	if err != nil {
		rt.s.logRouter("function", fn.spec.Name, "requestId", reqID, "emulator", e.url, "error", "invoking: "+err.Error())
		return nil, "", fmt.Errorf("the execution environment failed: %w", err)
	}
	if kind, payload, ok := functionError(status, out, reqID, fn.spec.Timeout); ok {
		return payload, kind, nil
	}
	if status != http.StatusOK {
		msg := fmt.Sprintf("the emulator answered HTTP %d: %.200s", status, out)
		rt.s.logRouter("function", fn.spec.Name, "requestId", reqID, "emulator", e.url, "error", msg)
		return nil, "", errors.New(msg)
	}
	return out, "", nil
}

// Invocations is how many invokes of function the Invoke API has accepted
// (each one reached, or tried to reach, an execution environment).
func (s *Stack) Invocations(function string) int64 {
	if f := s.functions[function]; f != nil {
		return f.invocations.Load()
	}
	return 0
}

// refuse keeps web pages away from the Invoke API, which runs any function
// for whoever reaches it and has no authentication (Lambda's SigV4 is not
// checked locally). A page can reach a loopback port through DNS rebinding
// (a foreign Host) or a cross-site request; the AWS SDK sends neither a
// foreign Host, nor Origin or Sec-Fetch-* headers, nor a content type a
// browser may send without a CORS preflight (it sends
// application/octet-stream). It returns the status of a refusal, or 0.
func (rt router) refuse(r *http.Request) (int, string) {
	if !rt.hostAllowed(r.Host) {
		return http.StatusForbidden, fmt.Sprintf("host %q is not served by the local Invoke API (loopback only; see Config.InvokeAllowedHosts)", r.Host)
	}
	if r.Header.Get("Origin") != "" {
		return http.StatusForbidden, "browser requests (Origin) are not served by the local Invoke API"
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "none" {
		return http.StatusForbidden, "browser requests (Sec-Fetch-Site) are not served by the local Invoke API"
	}
	if r.Method == http.MethodPost {
		switch mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt {
		case "text/plain", "application/x-www-form-urlencoded", "multipart/form-data":
			// The types a form or a simple fetch sends without a preflight.
			return http.StatusUnsupportedMediaType, "Content-Type " + mt + " is not an Invoke payload"
		}
	}
	return 0, ""
}

// hostAllowed accepts loopback names and addresses, with or without a port,
// and Config.InvokeAllowedHosts.
func (rt router) hostAllowed(hostport string) bool {
	return localonly.Host(hostport, rt.s.cfg.InvokeAllowedHosts...)
}

// functionError recognises the emulator's ways of reporting that the
// function did not answer normally, which differ from Lambda's, and returns
// what Lambda returns instead (a 200 with X-Amz-Function-Error: Unhandled):
//
//   - the runtime reported an error (a Go handler returned one): the RIE
//     answers 200 with {"errorMessage","errorType"} and drops the
//     Lambda-Runtime-Function-Error-Type header;
//   - the runtime crashed (exit, panic): 502 with the same shape, errorType
//     Runtime.ExitError;
//   - the function timed out: 200 with the text "Task timed out after N.00
//     seconds" (Lambda: errorType Sandbox.Timedout).
func functionError(status int, body []byte, reqID string, timeout int) (string, []byte, bool) {
	trimmed := bytes.TrimSpace(body)
	if bytes.HasPrefix(trimmed, []byte("Task timed out after ")) {
		msg := fmt.Sprintf("RequestId: %s Error: %s", reqID, trimmed)
		b, _ := json.Marshal(map[string]string{"errorType": "Sandbox.Timedout", "errorMessage": msg})
		return "Unhandled", b, true
	}
	var shape map[string]json.RawMessage
	if json.Unmarshal(trimmed, &shape) == nil && len(shape) > 0 {
		_, hasType := shape["errorType"]
		_, hasMsg := shape["errorMessage"]
		only := true
		for k := range shape {
			switch k {
			case "errorType", "errorMessage", "stackTrace", "cause":
			default:
				only = false
			}
		}
		if (hasType || hasMsg) && only {
			return "Unhandled", trimmed, true
		}
	}
	if status >= 500 {
		b, _ := json.Marshal(map[string]string{"errorType": "Runtime.Unknown", "errorMessage": fmt.Sprintf("RequestId: %s Error: %.500s", reqID, trimmed)})
		return "Unhandled", b, true
	}
	return "", nil, false
}

// functionNameFromPath extracts {name} from the Invoke path. A name may be
// a function name, a partial or full ARN, with or without a :qualifier; the
// local function is the name segment of it.
func functionNameFromPath(p string) (string, bool) {
	name, streaming, ok := invokePath(p)
	return name, ok && !streaming
}

// invokePath extracts {name} from the path of Invoke or of
// InvokeWithResponseStream (streaming).
func invokePath(p string) (name string, streaming, ok bool) {
	rest, ok := strings.CutPrefix(p, invokePrefix)
	if ok {
		name, ok = strings.CutSuffix(rest, "/invocations")
	} else if rest, ok = strings.CutPrefix(p, streamInvokePrefix); ok {
		name, ok = strings.CutSuffix(rest, "/response-streaming-invocations")
		streaming = true
	}
	if !ok || name == "" || strings.Contains(name, "/") {
		return "", false, false
	}
	return localFunctionName(name), streaming, true
}

// localFunctionName reduces "arn:aws:lambda:r:a:function:name[:q]",
// "a:function:name" or "name[:q]" to name.
func localFunctionName(s string) string {
	parts := strings.Split(s, ":")
	for i, p := range parts {
		if p == "function" && i+1 < len(parts) {
			return parts[i+1]
		}
	}
	return parts[0]
}

func lambdaError(w http.ResponseWriter, status int, code, typ, msg string) {
	lambdaErrorReason(w, status, code, typ, msg, "")
}

// lambdaErrorReason writes an error as the Lambda API does: the SDK takes
// the error code from X-Amzn-ErrorType and the message from "message".
func lambdaErrorReason(w http.ResponseWriter, status int, code, typ, msg, reason string) {
	body := map[string]string{"Type": typ, "message": msg}
	if reason != "" {
		body["Reason"] = reason
	}
	b, _ := json.Marshal(body)
	w.Header().Set("X-Amzn-ErrorType", code)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func readLimited(r *http.Request, limit int64) ([]byte, error) {
	var buf bytes.Buffer
	n, err := buf.ReadFrom(http.MaxBytesReader(nil, r.Body, limit))
	if err != nil {
		return nil, err
	}
	return buf.Bytes()[:n], nil
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
