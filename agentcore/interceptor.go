package agentcore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/calltoken"
	"github.com/mcpfn/mcpfn/gateway"
	"github.com/mcpfn/mcpfn/wire"
)

// TargetSeparator joins an AgentCore target's name and a tool's name in
// params.name ("<target>___<tool>").
const TargetSeparator = wire.AgentCoreTargetSeparator

// RPCUnauthorized is the JSON-RPC error code of a short-circuited request
// whose bearer token does not verify (HTTP 401); JSON-RPC leaves -32000 to
// -32099 to the implementation.
const RPCUnauthorized = -32001

// DefaultTokenTTL is how long a call token stays valid: the gateway invokes
// the target right after the interceptor answers, and the function verifies
// the token first thing, cold start included.
const DefaultTokenTTL = time.Minute

// keyReloadInterval is how often the interceptor reads its keys again (on
// the first invocation after it), so a rotation's new key signs within it.
const keyReloadInterval = 10 * time.Minute

// JWTVerifier verifies a bearer token; *gateway.JWTVerifier is the one used.
type JWTVerifier interface {
	Verify(ctx context.Context, token string) (*adapter.Identity, error)
}

// Config configures an [Interceptor].
type Config struct {
	// Tools is the catalog: the scopes each tool requires.
	Tools []*adapter.Tool
	// Signer holds every tool's function key (calltoken.LoadSigner with
	// calltoken.SignerInterceptor).
	Signer *calltoken.Signer
	// JWT verifies the caller's bearer token.
	JWT JWTVerifier
	// TokenTTL is how long a signed call token is valid (DefaultTokenTTL).
	TokenTTL time.Duration
	// Logger records each decision (never a token). Default slog.Default().
	Logger *slog.Logger
	// Now is the clock (tests). Default time.Now.
	Now func() time.Time
}

// Interceptor is the REQUEST interceptor. Its Handle method is the Lambda
// handler.
type Interceptor struct {
	cfg   Config
	tools map[string]*adapter.Tool

	mu         sync.Mutex
	lastReload time.Time
}

// New checks cfg: every catalog tool needs a key to sign for.
func New(cfg Config) (*Interceptor, error) {
	if cfg.Signer == nil || cfg.JWT == nil || len(cfg.Tools) == 0 {
		return nil, errors.New("agentcore: an interceptor needs the catalog, a signer and a JWT verifier")
	}
	if cfg.TokenTTL <= 0 {
		cfg.TokenTTL = DefaultTokenTTL
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	keyed := map[string]bool{}
	for _, t := range cfg.Signer.Tools() {
		keyed[t] = true
	}
	i := &Interceptor{cfg: cfg, tools: map[string]*adapter.Tool{}, lastReload: cfg.Now()}
	var missing []string
	for _, t := range cfg.Tools {
		i.tools[t.Name()] = t
		if !keyed[t.Name()] {
			missing = append(missing, t.Name())
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("agentcore: no function key for tool(s) %s (%s, %s)", strings.Join(missing, ", "),
			gateway.EnvToolFunctions, calltoken.EnvKeySecrets)
	}
	return i, nil
}

// Handle answers one interceptor event. It returns an error (a Lambda
// function error, which fails the request) only for an event it cannot
// read: failing closed, never forwarding what it did not check.
func (i *Interceptor) Handle(ctx context.Context, in Input) (*Output, error) {
	if in.InterceptorInputVersion != InputVersion {
		return nil, fmt.Errorf("agentcore: interceptorInputVersion %q is not %q", in.InterceptorInputVersion, InputVersion)
	}
	body := in.MCP.GatewayRequest.Body
	if len(body) == 0 && in.MCP.RawGatewayRequest != nil {
		body = json.RawMessage(in.MCP.RawGatewayRequest.Body)
	}
	// A body handed over as a JSON string holds the JSON-RPC text.
	var s string
	if json.Unmarshal(body, &s) == nil {
		body = json.RawMessage(s)
	}
	// What AgentCore's parser could read otherwise than this one is
	// refused before anything is decided on it (strict.go).
	why, err := ambiguity(body)
	var msg map[string]json.RawMessage
	if err == nil && why == "" {
		err = json.Unmarshal(body, &msg)
	}
	if err != nil || (why == "" && msg == nil) {
		// Not one JSON-RPC object (a batch, or garbage): nothing in it
		// was checked, so nothing of it goes on.
		return respond(http.StatusBadRequest, wire.RPCErrorJSON(nil, wire.RPCInvalidRequest,
			"the mcpfn interceptor accepts one JSON-RPC request object per HTTP request")), nil
	}
	if why != "" {
		return respond(http.StatusBadRequest, wire.RPCErrorJSON(nil, wire.RPCInvalidRequest,
			"the mcpfn interceptor refuses a request that JSON parsers could read differently: "+why)), nil
	}
	headers := in.MCP.GatewayRequest.Headers
	var method string
	if raw, ok := msg["method"]; ok && json.Unmarshal(raw, &method) != nil {
		method = ""
	}
	if sent, ok := headerSent(headers, "Mcp-Method"); ok && strings.TrimSpace(sent) != method {
		return respond(http.StatusBadRequest, wire.RPCErrorJSON(msg["id"], mcp.CodeHeaderMismatch,
			"the Mcp-Method header does not match the request body's method")), nil
	}
	if method != "tools/call" {
		// Any other method reaches no target. It passes as sent, once its
		// name is one no parser or router could take for tools/call.
		if code, why := methodName(method); code != 0 {
			return respond(http.StatusBadRequest, wire.RPCErrorJSON(msg["id"], code, why)), nil
		}
		return forward(body), nil
	}
	return i.toolsCall(ctx, headers, msg), nil
}

// toolsCall checks the caller and signs the call, or refuses it.
func (i *Interceptor) toolsCall(ctx context.Context, headers map[string]string, msg map[string]json.RawMessage) *Output {
	id := msg["id"]
	log := i.cfg.Logger.With("method", "tools/call")

	token := bearer(headers)
	if token == "" {
		log.WarnContext(ctx, "mcpfn interceptor: refused", "reason", "no_bearer_token")
		return unauthorized(id, "no bearer token reached the interceptor (the gateway's interceptor configuration needs PassRequestHeaders: true)")
	}
	caller, err := i.cfg.JWT.Verify(ctx, token)
	if err != nil {
		log.WarnContext(ctx, "mcpfn interceptor: refused", "reason", "invalid_bearer_token", "error", err.Error())
		return unauthorized(id, "the bearer token does not verify")
	}
	caller.UserAgent = header(headers, "User-Agent")

	var params map[string]json.RawMessage
	if err := json.Unmarshal(msg["params"], &params); err != nil || params == nil {
		return respond(http.StatusOK, wire.RPCErrorJSON(id, wire.RPCInvalidParams, "tools/call needs params with a tool name"))
	}
	var name string
	_ = json.Unmarshal(params["name"], &name)
	if sent, ok := headerSent(headers, "Mcp-Name"); ok && strings.TrimSpace(sent) != name {
		return respond(http.StatusBadRequest, wire.RPCErrorJSON(id, mcp.CodeHeaderMismatch,
			"the Mcp-Name header does not match the request body's tool name"))
	}
	toolName := name
	if _, after, ok := strings.Cut(name, TargetSeparator); ok {
		toolName = after
	}
	tool := i.tools[toolName]
	if tool == nil {
		return respond(http.StatusOK, wire.RPCErrorJSON(id, wire.RPCInvalidParams, fmt.Sprintf("unknown tool %q", name)))
	}
	log = log.With("tool", toolName, "subject", caller.Subject)

	args := map[string]json.RawMessage{}
	if raw := params["arguments"]; len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &args); err != nil || args == nil {
			return respond(http.StatusOK, wire.RPCErrorJSON(id, wire.RPCInvalidParams, "tools/call arguments must be an object"))
		}
	}
	// Only the interceptor speaks under the reserved key.
	delete(args, wire.ReservedArgument)

	if denied := gateway.AuthorizeTool(tool, caller); denied != nil {
		log.InfoContext(ctx, "mcpfn interceptor: refused", "reason", string(denied.Code))
		return respond(http.StatusOK, rpcResult(id, wire.ErrorResult(denied.Body())))
	}

	argsJSON, err := json.Marshal(args)
	if err != nil {
		return respond(http.StatusOK, wire.RPCErrorJSON(id, wire.RPCInvalidParams, "tools/call arguments cannot be re-encoded"))
	}
	// A multi-round retry's answers and state are signed as they are
	// forwarded. A Lambda target receives the arguments only, so the
	// function refuses such a retry (token_wrong_round) rather than run it
	// without the answers the client gave.
	var state string
	if raw := params["requestState"]; len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &state); err != nil {
			return respond(http.StatusOK, wire.RPCErrorJSON(id, wire.RPCInvalidParams, "tools/call requestState must be a string"))
		}
	}
	i.maybeReload(ctx)
	callID := wire.NewCallID()
	tok, err := i.cfg.Signer.Sign(calltoken.Call{
		Tool: toolName, CallID: callID, Caller: caller, Args: argsJSON, Expires: i.cfg.Now().Add(i.cfg.TokenTTL),
		InputResponses: params["inputResponses"], RequestState: state,
	})
	if err != nil {
		log.ErrorContext(ctx, "mcpfn interceptor: cannot sign", "error", err.Error())
		return respond(http.StatusOK, wire.RPCErrorJSON(id, wire.RPCInternalError, "the interceptor cannot sign calls to this tool"))
	}
	reserved, _ := json.Marshal(map[string]string{"callToken": tok})
	args[wire.ReservedArgument] = reserved
	params["arguments"], _ = json.Marshal(args)
	msg["params"], _ = json.Marshal(params)
	body, _ := json.Marshal(msg)
	log.InfoContext(ctx, "mcpfn interceptor: signed", "call_id", callID)
	return forward(body)
}

// maybeReload reads the keys again once keyReloadInterval has passed; a
// failure keeps the current keys signing.
func (i *Interceptor) maybeReload(ctx context.Context) {
	i.mu.Lock()
	due := i.cfg.Now().Sub(i.lastReload) >= keyReloadInterval
	if due {
		i.lastReload = i.cfg.Now()
	}
	i.mu.Unlock()
	if !due {
		return
	}
	if err := i.cfg.Signer.Reload(ctx); err != nil {
		i.cfg.Logger.WarnContext(ctx, "mcpfn interceptor: reloading call-token keys failed; the current ones keep signing", "error", err.Error())
	}
}

// header reads a header case-insensitively: AgentCore passes them
// lower-cased, other senders may not.
func header(h map[string]string, name string) string {
	if v, ok := h[strings.ToLower(name)]; ok {
		return v
	}
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// headerSent reads a header case-insensitively and says whether it was
// sent at all.
func headerSent(h map[string]string, name string) (string, bool) {
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return "", false
}

func bearer(h map[string]string) string {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(header(h, "Authorization")), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

func forward(body json.RawMessage) *Output {
	return &Output{InterceptorOutputVersion: OutputVersion, MCP: OutputMCP{
		TransformedGatewayRequest: &TransformedRequest{Body: body},
	}}
}

func respond(status int, body json.RawMessage) *Output {
	return &Output{InterceptorOutputVersion: OutputVersion, MCP: OutputMCP{
		TransformedGatewayResponse: &TransformedResponse{StatusCode: status, Body: body},
	}}
}

func unauthorized(id json.RawMessage, msg string) *Output {
	o := respond(http.StatusUnauthorized, wire.RPCErrorJSON(id, RPCUnauthorized, "unauthorized: "+msg))
	o.MCP.TransformedGatewayResponse.Headers = map[string]string{"WWW-Authenticate": `Bearer error="invalid_token"`}
	return o
}

func rpcResult(id json.RawMessage, result json.RawMessage) json.RawMessage {
	b, _ := json.Marshal(wire.NewRPCResponse(id, result, nil))
	return b
}

// TargetName is the AgentCore Gateway target name of a tool's function in
// template.yaml: the tool name with "-" for "_" (target names allow no
// underscore). params.name and Cedar action ids are
// TargetName(tool) + TargetSeparator + tool.
func TargetName(tool string) string { return strings.ReplaceAll(tool, "_", "-") }
