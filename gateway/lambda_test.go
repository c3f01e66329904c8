package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/internal/lambdatest"
)

// functionURLEvent is a Function URL (payload 2.0) event for one MCP POST, as
// Lambda delivers it; iam is the principal an AWS_IAM Function URL verified.
func functionURLEvent(body string, iam *events.LambdaFunctionURLRequestContextAuthorizerIAMDescription, headers map[string]string) *events.LambdaFunctionURLRequest {
	h := map[string]string{
		"content-type": "application/json",
		"accept":       "application/json, text/event-stream",
		"host":         "abc123.lambda-url.us-east-1.on.aws",
	}
	for k, v := range headers {
		h[k] = v
	}
	ev := &events.LambdaFunctionURLRequest{
		Version: "2.0", RawPath: "/mcp", Headers: h, Body: body,
		RequestContext: events.LambdaFunctionURLRequestContext{
			DomainName: "abc123.lambda-url.us-east-1.on.aws",
			HTTP: events.LambdaFunctionURLRequestContextHTTPDescription{
				Method: http.MethodPost, Path: "/mcp", SourceIP: "203.0.113.9", UserAgent: "test-agent",
			},
		},
	}
	if iam != nil {
		ev.RequestContext.Authorizer = &events.LambdaFunctionURLRequestContextAuthorizerDescription{IAM: iam}
	}
	return ev
}

// invokeURL is one invocation of the gateway's Lambda handler (a
// RESPONSE_STREAM Function URL) with ev, read to the end of the stream. It
// reports a failure with t.Error, so it may run in a goroutine of the test.
func invokeURL(t *testing.T, ctx context.Context, g *Gateway, ev *events.LambdaFunctionURLRequest) (status int, body string) {
	t.Helper()
	resp, err := g.FunctionURLHandler()(ctx, ev)
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Error(err)
	}
	return resp.StatusCode, string(b)
}

// lambdaContext is the context aws-lambda-go gives the gateway's own
// invocation: its X-Ray header and its deadline.
func lambdaContext(trace string, timeout time.Duration) (context.Context, context.CancelFunc) {
	return lambdatest.Context(context.Background(), lambdatest.Invocation{RequestID: "gw-req-1", Trace: trace, Timeout: timeout})
}

func TestLambdaFunctionURLWithIAM(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.Auth = AuthIAM
		c.IAMScopes = []string{"things:write"}
		c.AllowedHosts = []string{"abc123.lambda-url.us-east-1.on.aws"}
	})
	principal := &events.LambdaFunctionURLRequestContextAuthorizerIAMDescription{
		AccountID: "123456789012", CallerID: "AROAEXAMPLE:agent", UserID: "AROAEXAMPLE:agent",
		UserARN: "arn:aws:sts::123456789012:assumed-role/agent/agent",
	}
	call := `{"jsonrpc":"2.0","id":"call-7","method":"tools/call","params":{"name":"thing_delete","arguments":{"entityId":"t-9"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"agent-x","version":"2"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
	root := newTraceRoot()
	ctx, cancel := lambdaContext("Root="+root+";Parent=1111111111111111;Sampled=1", 20*time.Second)
	defer cancel()
	status, body := invokeURL(t, ctx, e.gw, functionURLEvent(call, principal, map[string]string{
		"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "thing_delete",
		// A header naming someone else is not the principal.
		"x-user": "alice",
	}))
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	var rpc struct {
		ID     string             `json:"id"`
		Result mcp.CallToolResult `json:"result"`
	}
	if err := json.Unmarshal([]byte(body), &rpc); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	f := factsFrom(t, &rpc.Result)
	if f.Subject != "arn:aws:sts::123456789012:assumed-role/agent" || f.RoleSession != "agent" || f.AuthMethod != "iam" || f.Tenant != "123456789012" {
		t.Errorf("identity %+v", f)
	}
	if f.Era != "modern" || f.ClientName != "agent-x" || f.JSONRPCID != `"call-7"` {
		t.Errorf("mcp facts %+v", f)
	}
	// On Lambda the gateway's trace position is its own invocation's.
	sp, ok := e.spans.byCall(f.CallID)
	if !ok || f.TraceRoot != root || f.TraceParent != sp.ID || sp.ParentID != "1111111111111111" {
		t.Errorf("trace: facts %+v span %+v", f, sp)
	}

	// No principal in the request context: refused, whatever the headers say.
	status, _ = invokeURL(t, ctx, e.gw, functionURLEvent(call, nil, map[string]string{
		"mcp-protocol-version": "2026-07-28", "x-user": "alice",
		"x-amz-caller-arn": principal.UserARN,
	}))
	if status != http.StatusUnauthorized {
		t.Errorf("no principal: status %d", status)
	}
	// The same over plain HTTP (local): never trusted.
	if r, body := e.post(t, call, http.Header{"X-User": {"alice"}}); r.StatusCode != http.StatusForbidden && r.StatusCode != http.StatusUnauthorized {
		t.Errorf("plain HTTP in iam mode: %d %s", r.StatusCode, body)
	}
}

func TestGatewayDeadlineCapsTheCall(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.Auth = AuthNone
		c.AllowedHosts = []string{"abc123.lambda-url.us-east-1.on.aws"}
		c.InvokeTimeout = time.Minute
	})
	e.api.setMisbehave("fn-flaky", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(3 * time.Second):
		}
	})
	// The gateway's own invocation has 1s left: the forward must give up
	// before that (reserve 250ms) and still answer. Real time, bounded
	// loosely: the fake Lambda API is a real HTTP server, which a synctest
	// bubble cannot wait on, and the call token carries its expiry in whole
	// seconds, so nothing on the wire shows the forward's deadline exactly.
	ctx, cancel := lambdaContext("Root="+newTraceRoot()+";Parent=1111111111111111;Sampled=1", time.Second)
	defer cancel()
	start := time.Now()
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"flaky_get","arguments":{"entityId":"d"}}}`
	_, body := invokeURL(t, ctx, e.gw, functionURLEvent(call, nil, nil))
	if elapsed := time.Since(start); elapsed > 900*time.Millisecond {
		t.Errorf("answered after %v, past the reserve", elapsed)
	}
	if !strings.Contains(body, `\"error\":\"TIMEOUT\"`) || !strings.Contains(body, `"isError":true`) {
		t.Errorf("body %s", body)
	}
}

func TestConfigFromEnv(t *testing.T) {
	env := map[string]string{
		EnvToolFunctions:         " echo_call = fn-echo ,thing_delete=arn:aws:lambda:us-east-1:123456789012:function:fn-secure:live",
		EnvAuthMode:              "JWT",
		EnvJWTIssuer:             "https://issuer.example",
		EnvJWTAudience:           "mcpfn",
		EnvAllowedHosts:          "a.example, b.example",
		EnvAllowedOrigins:        "https://app.example",
		EnvInvokeTimeout:         "12s",
		EnvMaxBodyBytes:          "2048",
		"MCPFN_CALL_KEY_SECRETS": "echo_call=arn:aws:secretsmanager:us-east-1:123456789012:secret:echo-AbCdEf,thing_delete=secure-key",
	}
	cfg, err := ConfigFrom(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Functions["echo_call"] != "fn-echo" || cfg.Functions["thing_delete"] != "arn:aws:lambda:us-east-1:123456789012:function:fn-secure:live" ||
		cfg.Auth != AuthJWT || cfg.InvokeTimeout != 12*time.Second || cfg.MaxBodyBytes != 2048 ||
		len(cfg.AllowedHosts) != 2 || cfg.AllowedOrigins[0] != "https://app.example" {
		t.Fatalf("cfg = %+v", cfg)
	}
	cat := testCatalog(t)
	cfg.Tools = []*adapter.Tool{cat.echo, cat.secure}
	if err := cfg.check(); err != nil {
		t.Fatal(err)
	}
	if cfg.JWT.JWKSURL != "https://issuer.example/.well-known/jwks.json" {
		t.Errorf("JWKS URL default %q", cfg.JWT.JWKSURL)
	}

	bad := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"no auth mode", map[string]string{EnvToolFunctions: "echo_call=f"}, "none must be explicit"},
		{"unknown auth mode", map[string]string{EnvAuthMode: "open", EnvToolFunctions: "echo_call=f"}, "want iam, jwt, or none"},
		{"jwt without issuer", map[string]string{EnvAuthMode: "jwt", EnvToolFunctions: "echo_call=f"}, EnvJWTIssuer},
		{"malformed mapping", map[string]string{EnvAuthMode: "none", EnvToolFunctions: "echo_call"}, "want tool=function"},
		{"unmapped tool", map[string]string{EnvAuthMode: "none", EnvToolFunctions: ""}, `"echo_call" has no function`},
		{"unknown tool", map[string]string{EnvAuthMode: "none", EnvToolFunctions: "echo_call=f,echo_cal=g"}, "echo_cal"},
		{"bad timeout", map[string]string{EnvAuthMode: "none", EnvToolFunctions: "echo_call=f", EnvInvokeTimeout: "soon"}, EnvInvokeTimeout},
		// No function accepts a token living longer: refused at start,
		// not at the first signature.
		{"timeout past a token's life", map[string]string{EnvAuthMode: "none", EnvToolFunctions: "echo_call=f", EnvInvokeTimeout: "16m"}, EnvInvokeTimeout + "=16m0s: at most 15m0s"},
		{"run window past a task token's life", map[string]string{EnvAuthMode: "none", EnvToolFunctions: "echo_call=f", EnvTaskRunWindow: "61m"}, EnvTaskRunWindow + "=1h1m0s: at most 1h0m0s"},
	}
	for _, b := range bad {
		t.Run(b.name, func(t *testing.T) {
			cfg, err := ConfigFrom(func(k string) string { return b.env[k] })
			if err == nil {
				cfg.Tools = []*adapter.Tool{cat.echo}
				err = cfg.check()
			}
			if err == nil || !strings.Contains(err.Error(), b.want) {
				t.Fatalf("err = %v, want it to mention %q", err, b.want)
			}
		})
	}
}

func TestServeLocallyAndShutDown(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Auth = AuthNone })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.gw.Serve(ctx, ln) }()
	e.mcpURL = "http://" + ln.Addr().String() + "/mcp"
	cs := e.mustConnect(t, "local", "", nil)
	if f := factsFrom(t, callTool(t, cs, "echo_call", map[string]any{"entityId": "l-1"})); f.EntityID != "l-1" {
		t.Fatalf("facts %+v", f)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not stop")
	}
}

func TestIAMAssumedRoleSubjectIsTheRole(t *testing.T) {
	aud, client, table := auditTable(t)
	principal := &events.LambdaFunctionURLRequestContextAuthorizerIAMDescription{
		AccountID: "123456789012", CallerID: "AROAEXAMPLEID:mallory-chose-this", UserID: "AROAEXAMPLEID:mallory-chose-this",
		UserARN: "arn:aws:sts::123456789012:assumed-role/agent/mallory-chose-this",
	}
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo_call","arguments":{"entityId":"r-1"}}}`
	for _, c := range []struct {
		name          string
		sessionLevel  bool
		subject, user string
	}{
		// The role is who was authorised; the session name is whatever the
		// assumer typed (sts:AssumeRole RoleSessionName).
		{"role", false, "arn:aws:sts::123456789012:assumed-role/agent", "AROAEXAMPLEID"},
		{"session level, opted in", true, principal.UserARN, principal.UserID},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, func(cfg *Config) {
				cfg.Auth = AuthIAM
				cfg.IAMSessionSubjects = c.sessionLevel
				cfg.AllowedHosts = []string{"abc123.lambda-url.us-east-1.on.aws"}
			})
			e.api.mu.Lock()
			e.api.functions["fn-echo"] = adapter.New(e.cat.echo, adapter.WithAuditor(aud), adapter.WithLogger(e.cfgUsed.Logger), adapter.WithCallVerifier(e.verifiers["fn-echo"]))
			e.api.mu.Unlock()
			ctx, cancel := lambdaContext("", 20*time.Second)
			defer cancel()
			_, body := invokeURL(t, ctx, e.gw, functionURLEvent(call, principal, nil))
			var rpc struct {
				Result mcp.CallToolResult `json:"result"`
			}
			if err := json.Unmarshal([]byte(body), &rpc); err != nil {
				t.Fatalf("%v: %s", err, body)
			}
			f := factsFrom(t, &rpc.Result)
			if f.Subject != c.subject || f.ClientID != c.user || f.RoleSession != "mallory-chose-this" {
				t.Errorf("identity %+v, want subject %s, client %s, session recorded apart", f, c.subject, c.user)
			}
			rows := rowsOf(t, client, table, f.CallID)
			if len(rows) != 1 || attr(rows[0], "callerSubject") != c.subject || attr(rows[0], "callerRoleSession") != "mallory-chose-this" {
				t.Errorf("audit rows %v", rows)
			}
		})
	}
	// An IAM user has no session: its ARN is the subject.
	if role, session := splitAssumedRole("arn:aws:iam::123456789012:user/alice"); role != "arn:aws:iam::123456789012:user/alice" || session != "" {
		t.Errorf("user: %s %s", role, session)
	}
}
