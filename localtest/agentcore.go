package localtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/agentcore"
	"github.com/mcpfn/mcpfn/gateway"
	"github.com/mcpfn/mcpfn/internal/samtemplate"
	"github.com/mcpfn/mcpfn/mcptool"
	"github.com/mcpfn/mcpfn/wire"
)

// Template types of the AgentCore Gateway resources.
const (
	typeAgentCoreGateway = "AWS::BedrockAgentCore::Gateway"
	typeAgentCoreTarget  = "AWS::BedrockAgentCore::GatewayTarget"
)

// agentCoreWiring is what template.yaml says about its AgentCore Gateway:
// the REQUEST interceptor function and one Lambda target per tool.
type agentCoreWiring struct {
	gatewayID   string // the gateway's logical ID
	interceptor string // the interceptor function's logical ID ("" = none)
	passHeaders bool
	targets     []agentCoreTarget
}

type agentCoreTarget struct {
	id       string // logical ID, standing in for the target id
	name     string // the target's Name
	function string // the Lambda function's logical ID
	tool     string // the tool its inline schema names
}

// agentCoreFromTemplate reads the (first) AgentCore Gateway of the template
// and its targets; nil when the template has none.
func agentCoreFromTemplate(t *samtemplate.Template) (*agentCoreWiring, error) {
	ids := t.LogicalIDs(typeAgentCoreGateway)
	if len(ids) == 0 {
		return nil, nil
	}
	gw, _ := t.Resource(ids[0])
	w := &agentCoreWiring{gatewayID: ids[0]}
	for _, ic := range asList(gw.Properties["InterceptorConfigurations"]) {
		m, _ := ic.(map[string]any)
		points := fmt.Sprint(m["InterceptionPoints"])
		if !strings.Contains(points, "REQUEST") {
			continue
		}
		lam, _ := dig(m, "Interceptor", "Lambda").(map[string]any)
		w.interceptor = getAttResource(lam["Arn"])
		w.passHeaders, _ = dig(m, "InputConfiguration", "PassRequestHeaders").(bool)
	}
	for _, id := range t.LogicalIDs(typeAgentCoreTarget) {
		r, _ := t.Resource(id)
		name, _ := r.Properties["Name"].(string)
		lam, _ := dig(r.Properties, "TargetConfiguration", "Mcp", "Lambda").(map[string]any)
		fn := getAttResource(lam["LambdaArn"])
		var tool string
		if inline := asList(dig(lam, "ToolSchema", "InlinePayload")); len(inline) == 1 {
			def, _ := inline[0].(map[string]any)
			tool, _ = def["Name"].(string)
		}
		if name == "" || fn == "" || tool == "" {
			return nil, fmt.Errorf("localtest: AgentCore target %s needs a literal Name, TargetConfiguration.Mcp.Lambda.LambdaArn: !GetAtt <Function>.Arn and one inline tool", id)
		}
		w.targets = append(w.targets, agentCoreTarget{id: id, name: name, function: fn, tool: tool})
	}
	return w, nil
}

func dig(v any, path ...string) any {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// getAttResource returns X for !GetAtt X.Arn.
func getAttResource(v any) string {
	fn, arg, ok := samtemplate.Intrinsic(v)
	if !ok || fn != "Fn::GetAtt" {
		return ""
	}
	switch a := arg.(type) {
	case []any:
		if len(a) == 2 && a[1] == "Arn" {
			s, _ := a[0].(string)
			return s
		}
	case string:
		if x, ok := strings.CutSuffix(a, ".Arn"); ok {
			return x
		}
	}
	return ""
}

// agentCoreFront stands in for Amazon Bedrock AgentCore Gateway in front of
// the stack's functions, as far as its documentation describes it: an MCP
// endpoint whose CUSTOM_JWT authorizer checks the bearer token, which hands
// every request to the REQUEST interceptor function and applies its answer,
// and which invokes a tool's Lambda target with the arguments as payload and
// the tool's facts in the client context. Everything it invokes goes through
// the stack's Invoke API, so the interceptor and the targets run under the
// emulator like every function.
type agentCoreFront struct {
	wiring  *agentCoreWiring
	jwt     *gateway.JWTVerifier
	invoker *lambda.Client
	mcp     http.Handler
	log     *slog.Logger
	gwID    string // the gateway id the targets are told
}

type agentCoreRequestKey struct{}

// agentCoreRequest is one HTTP request's facts, for the target's client
// context.
type agentCoreRequest struct {
	requestID string
	messageID string
}

func newAgentCoreFront(ctx context.Context, w *agentCoreWiring, tools []*adapter.Tool, jwtCfg gateway.JWTConfig, invoker *lambda.Client, log *slog.Logger) (*agentCoreFront, error) {
	jv, err := gateway.NewJWTVerifier(ctx, jwtCfg, log)
	if err != nil {
		return nil, err
	}
	f := &agentCoreFront{wiring: w, jwt: jv, invoker: invoker, log: log, gwID: "local-" + strings.ToLower(w.gatewayID)}
	byName := map[string]*adapter.Tool{}
	for _, t := range tools {
		byName[t.Name()] = t
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "mcpfn-local-agentcore-gateway", Version: "1.0.0"}, nil)
	for _, tg := range w.targets {
		tool := byName[tg.tool]
		if tool == nil {
			return nil, fmt.Errorf("localtest: AgentCore target %s names tool %q, which is not in the catalog", tg.id, tg.tool)
		}
		mt, err := mcptool.Of(tool)
		if err != nil {
			return nil, err
		}
		mt.Name = tg.name + agentcore.TargetSeparator + tg.tool
		srv.AddTool(mt, f.callTarget(tg))
	}
	f.mcp = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	return f, nil
}

const agentCoreMaxBody = 1 << 20

// startAgentCoreFront serves the AgentCore Gateway stand-in on ln. It
// checks tokens of the stack's issuer for the stack's audience, as the
// template's CUSTOM_JWT authorizer checks JwtIssuer and JwtAudience, and
// invokes through the stack's Invoke API.
func (s *Stack) startAgentCoreFront(ctx context.Context, ln net.Listener) error {
	var err error
	if s.acLog, err = os.OpenFile(s.LogPath(s.agentCore.gatewayID), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		return fmt.Errorf("localtest: %w", err)
	}
	log := slog.New(slog.NewJSONHandler(s.acLog, nil))
	invoker := lambda.New(lambda.Options{
		Region:       localRegion,
		BaseEndpoint: aws.String(s.invokeURL),
		// As the AgentCore Gateway's role (its RoleArn).
		Credentials: staticCredentials(s.iam.agentCore),
	})
	jwtCfg := gateway.JWTConfig{Issuer: s.iss.url, Audience: Audience, JWKSURL: s.iss.jwksURL()}
	front, err := newAgentCoreFront(ctx, s.agentCore, s.tools, jwtCfg, invoker, log)
	if err != nil {
		return err
	}
	s.acSrv = &http.Server{Handler: front, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.acSrv.Serve(ln) }()
	return nil
}

// AgentCoreURL is the AgentCore Gateway stand-in's MCP endpoint, "" when
// template.yaml declares no AgentCore Gateway.
func (s *Stack) AgentCoreURL() string { return s.acURL }

func (f *agentCoreFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/mcp" {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "the AgentCore Gateway stand-in serves POST /mcp", http.StatusMethodNotAllowed)
		return
	}
	// The CUSTOM_JWT authorizer: no valid token, no request.
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		unauthorizedHTTP(w)
		return
	}
	if _, err := f.jwt.Verify(r.Context(), strings.TrimSpace(token)); err != nil {
		unauthorizedHTTP(w)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, agentCoreMaxBody))
	if err != nil {
		http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
		return
	}
	req := &agentCoreRequest{requestID: uuid.NewString()}
	if f.wiring.interceptor != "" {
		out, err := f.intercept(r, body)
		if err != nil {
			f.log.Error("AgentCore front: interceptor failed", "error", err.Error())
			writeJSONRPCError(w, http.StatusInternalServerError, nil, wire.RPCInternalError, "the request interceptor failed")
			return
		}
		if resp := out.MCP.TransformedGatewayResponse; resp != nil {
			for k, v := range resp.Headers {
				w.Header().Set(k, v)
			}
			w.Header().Set("Content-Type", "application/json")
			status := resp.StatusCode
			if status == 0 {
				status = http.StatusOK
			}
			w.WriteHeader(status)
			_, _ = w.Write(resp.Body)
			return
		}
		if out.MCP.TransformedGatewayRequest == nil || len(out.MCP.TransformedGatewayRequest.Body) == 0 {
			writeJSONRPCError(w, http.StatusInternalServerError, nil, wire.RPCInternalError, "the request interceptor returned neither a request nor a response")
			return
		}
		body = out.MCP.TransformedGatewayRequest.Body
	}
	var peek struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(body, &peek)
	req.messageID = strings.Trim(string(peek.ID), `"`)
	r = r.WithContext(context.WithValue(r.Context(), agentCoreRequestKey{}, req))
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	f.mcp.ServeHTTP(w, r)
}

// intercept invokes the REQUEST interceptor with the event AgentCore
// documents (input version 1.0; headers lower-cased, passed only with
// PassRequestHeaders).
func (f *agentCoreFront) intercept(r *http.Request, body []byte) (*agentcore.Output, error) {
	headers := map[string]string{}
	if f.wiring.passHeaders {
		for k, v := range r.Header {
			headers[strings.ToLower(k)] = strings.Join(v, ",")
		}
	}
	in := agentcore.Input{InterceptorInputVersion: agentcore.InputVersion, MCP: agentcore.InputMCP{
		RawGatewayRequest: &agentcore.RawRequest{Body: string(body)},
		GatewayRequest:    agentcore.GatewayRequest{Path: r.URL.Path, HTTPMethod: r.Method, Headers: headers, Body: body},
	}}
	if !json.Valid(body) {
		in.MCP.GatewayRequest.Body = nil
	}
	payload, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	res, err := f.invoker.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(f.wiring.interceptor), Payload: payload})
	if err != nil {
		return nil, err
	}
	if res.FunctionError != nil {
		return nil, fmt.Errorf("function error %s: %.300s", *res.FunctionError, res.Payload)
	}
	var out agentcore.Output
	if err := json.Unmarshal(res.Payload, &out); err != nil {
		return nil, fmt.Errorf("interceptor output: %w", err)
	}
	if out.InterceptorOutputVersion != agentcore.OutputVersion {
		return nil, fmt.Errorf("interceptorOutputVersion %q", out.InterceptorOutputVersion)
	}
	return &out, nil
}

// callTarget invokes a tool's Lambda target as AgentCore does: the
// arguments object as payload, the tool's facts in the client context.
func (f *agentCoreFront) callTarget(tg agentCoreTarget) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		info, _ := ctx.Value(agentCoreRequestKey{}).(*agentCoreRequest)
		if info == nil {
			info = &agentCoreRequest{requestID: uuid.NewString()}
		}
		cc, err := wire.EncodeClientContext(&lambdacontext.ClientContext{Custom: map[string]string{
			wire.AgentCoreToolName:       tg.name + agentcore.TargetSeparator + tg.tool,
			wire.AgentCoreRequestID:      info.requestID,
			wire.AgentCoreMessageID:      info.messageID,
			wire.AgentCoreGatewayID:      f.gwID,
			wire.AgentCoreTargetID:       tg.id,
			wire.AgentCoreMessageVersion: "1.0",
		}})
		if err != nil {
			return nil, err
		}
		args := req.Params.Arguments
		if len(args) == 0 || string(args) == "null" {
			args = json.RawMessage("{}")
		}
		out, err := f.invoker.Invoke(ctx, &lambda.InvokeInput{
			FunctionName:  aws.String(tg.function),
			Payload:       args,
			ClientContext: aws.String(cc),
		})
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the target could not be invoked: " + err.Error()}
		}
		if out.FunctionError != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the target function failed"}
		}
		var res mcp.CallToolResult
		if err := json.Unmarshal(out.Payload, &res); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the target answered no CallToolResult"}
		}
		return &res, nil
	}
}

func unauthorizedHTTP(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
	writeJSONRPCError(w, http.StatusUnauthorized, nil, agentcore.RPCUnauthorized, "unauthorized: the bearer token does not verify")
}

func writeJSONRPCError(w http.ResponseWriter, status int, id json.RawMessage, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(wire.RPCErrorJSON(id, code, msg))
}
