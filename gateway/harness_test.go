package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/calltoken"
	"github.com/mcpfn/mcpfn/internal/lambdatest"
	"github.com/mcpfn/mcpfn/internal/secretsstandin"
	"github.com/mcpfn/mcpfn/wire"
)

// ---- the test catalog ----

type entityIn struct {
	EntityID string `json:"entityId"`
}

// facts is what the echo tool's function saw of its call: the test asserts on
// the function's view, not on the gateway's.
type facts struct {
	EntityID        string   `json:"entityId"`
	CallID          string   `json:"callId"`
	Source          string   `json:"source"`
	Subject         string   `json:"subject,omitempty"`
	AuthMethod      string   `json:"authMethod,omitempty"`
	ClientID        string   `json:"clientId,omitempty"`
	RoleSession     string   `json:"roleSession,omitempty"`
	Tenant          string   `json:"tenant,omitempty"`
	Scopes          []string `json:"scopes,omitempty"`
	Era             string   `json:"era,omitempty"`
	ProtocolVersion string   `json:"protocolVersion,omitempty"`
	ClientName      string   `json:"clientName,omitempty"`
	JSONRPCID       string   `json:"jsonrpcId,omitempty"`
	SessionID       string   `json:"sessionId,omitempty"`
	TraceRoot       string   `json:"traceRoot,omitempty"`
	TraceParent     string   `json:"traceParent,omitempty"`
	TraceFrom       string   `json:"traceFrom,omitempty"`
	LambdaRequestID string   `json:"lambdaRequestId,omitempty"`
	FunctionARN     string   `json:"functionArn,omitempty"`
}

func factsOf(call *adapter.Call, entity string) facts {
	f := facts{EntityID: entity, CallID: call.ID, Source: string(call.Source), SessionID: call.SessionID,
		Tenant: call.Tenant(), TraceRoot: call.Trace().Root, TraceParent: call.Trace().Parent, TraceFrom: call.Trace().From,
		LambdaRequestID: call.Lambda.RequestID, FunctionARN: call.Lambda.FunctionARN}
	if c := call.Caller(); c != nil {
		f.Subject, f.AuthMethod, f.ClientID, f.Scopes = c.Subject, c.AuthMethod, c.ClientID, c.Scopes
		f.RoleSession = c.RoleSession
	}
	if m := call.MCP; m != nil {
		f.Era, f.ProtocolVersion, f.JSONRPCID = string(m.Era), m.ProtocolVersion, string(m.JSONRPCID)
		if m.ClientInfo != nil {
			f.ClientName = m.ClientInfo.Name
		}
	}
	return f
}

// barrier holds every arriving call until n have arrived: n calls can only
// all pass if they run at the same time.
type barrier struct {
	mu      sync.Mutex
	n       int
	arrived int
	all     chan struct{}
}

func newBarrier(n int) *barrier { return &barrier{n: n, all: make(chan struct{})} }

func (b *barrier) wait(ctx context.Context) error {
	b.mu.Lock()
	b.arrived++
	if b.arrived == b.n {
		close(b.all)
	}
	b.mu.Unlock()
	select {
	case <-b.all:
		return nil
	case <-time.After(5 * time.Second):
		return adapter.Errorf(adapter.CodeConflict, "only %d of %d calls arrived together", b.arrived, b.n)
	case <-ctx.Done():
		return ctx.Err()
	}
}

type catalog struct {
	echo, together, secure, flaky, flakyDelete *adapter.Tool
	barrier                                    *barrier
}

func testCatalog(t testing.TB) *catalog {
	c := &catalog{barrier: newBarrier(20)}
	c.echo = adapter.MustDefine(adapter.ToolDef[entityIn, facts]{
		Name: "echo_call", Title: "Echo call", Description: "Reports what the function saw of the call.",
		ReadOnly: true, Idempotent: true,
		Handler: func(ctx context.Context, call *adapter.Call, in entityIn) (facts, error) {
			call.SetDimension("entityId", in.EntityID)
			return factsOf(call, in.EntityID), nil
		},
	})
	c.together = adapter.MustDefine(adapter.ToolDef[entityIn, facts]{
		Name: "meet_together", Description: "Returns only when 20 calls are in flight at once.",
		Handler: func(ctx context.Context, call *adapter.Call, in entityIn) (facts, error) {
			if err := c.barrier.wait(ctx); err != nil {
				return facts{}, err
			}
			return factsOf(call, in.EntityID), nil
		},
	})
	c.secure = adapter.MustDefine(adapter.ToolDef[entityIn, facts]{
		Name: "thing_delete", Description: "Deletes a thing.", Destructive: true,
		Scopes: []string{"things:write"},
		Handler: func(ctx context.Context, call *adapter.Call, in entityIn) (facts, error) {
			return factsOf(call, in.EntityID), nil
		},
	})
	c.flaky = adapter.MustDefine(adapter.ToolDef[entityIn, facts]{
		Name: "flaky_get", Description: "Its function misbehaves on demand.", ReadOnly: true,
		Handler: func(ctx context.Context, call *adapter.Call, in entityIn) (facts, error) {
			return factsOf(call, in.EntityID), nil
		},
	})
	c.flakyDelete = adapter.MustDefine(adapter.ToolDef[entityIn, facts]{
		Name: "flaky_delete", Description: "Destructive, and its function misbehaves on demand.", Destructive: true,
		Handler: func(ctx context.Context, call *adapter.Call, in entityIn) (facts, error) {
			return factsOf(call, in.EntityID), nil
		},
	})
	return c
}

func (c *catalog) tools() []*adapter.Tool {
	return []*adapter.Tool{c.echo, c.together, c.secure, c.flaky, c.flakyDelete}
}

// functions maps each tool to its function name; "mismatch" is a catalog
// entry routed to a function that serves another tool.
func (c *catalog) functions() map[string]string {
	return map[string]string{
		"echo_call": "fn-echo", "meet_together": "fn-together", "thing_delete": "fn-secure",
		"flaky_get": "fn-flaky", "flaky_delete": "fn-flaky-delete",
	}
}

// ---- an in-test Lambda Invoke API ----

// invokeAPI serves POST /2015-03-31/functions/{name}/invocations like the
// Lambda service (and sam local start-lambda): it runs the named function's
// adapter with a context built as aws-lambda-go builds one, and reports a
// function error with X-Amz-Function-Error.
type invokeAPI struct {
	*httptest.Server
	mu        sync.Mutex
	functions map[string]*adapter.Function
	// misbehave, when set for a function, answers instead of it.
	misbehave map[string]http.HandlerFunc
	invokes   map[string]int
	headers   []http.Header
	// async are the runs of InvocationType Event invokes still going.
	async sync.WaitGroup
}

func newInvokeAPI(t testing.TB, fns map[string]*adapter.Function) *invokeAPI {
	api := &invokeAPI{functions: fns, misbehave: map[string]http.HandlerFunc{}, invokes: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /2015-03-31/functions/{name}/invocations", api.invoke)
	mux.HandleFunc("POST /2021-11-15/functions/{name}/response-streaming-invocations", api.invokeStream)
	api.Server = httptest.NewServer(mux)
	t.Cleanup(func() { api.Close(); api.async.Wait() })
	return api
}

func (api *invokeAPI) setMisbehave(fn string, h http.HandlerFunc) {
	api.mu.Lock()
	defer api.mu.Unlock()
	if h == nil {
		delete(api.misbehave, fn)
	} else {
		api.misbehave[fn] = h
	}
}

func (api *invokeAPI) count(fn string) int {
	api.mu.Lock()
	defer api.mu.Unlock()
	return api.invokes[fn]
}

func (api *invokeAPI) invoke(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	api.mu.Lock()
	fn := api.functions[name]
	bad := api.misbehave[name]
	api.invokes[name]++
	api.headers = append(api.headers, r.Header.Clone())
	api.mu.Unlock()
	reqID := wire.NewCallID()
	w.Header().Set("X-Amzn-RequestId", reqID)
	// Read the payload first: only then does net/http notice a caller that
	// gave up (and cancel r.Context()).
	payload, _ := io.ReadAll(r.Body)
	if bad != nil {
		r.Body = io.NopCloser(bytes.NewReader(payload))
		bad(w, r)
		return
	}
	if fn == nil {
		w.Header().Set("X-Amzn-ErrorType", "ResourceNotFoundException")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"Type":"User","message":"Function not found: %s"}`, name)
		return
	}
	if r.Header.Get("X-Amz-Invocation-Type") == "Event" {
		// Lambda queues the event, answers 202 and runs it later, on a
		// context of its own.
		w.WriteHeader(http.StatusAccepted)
		api.async.Go(func() {
			ctx, cancel := lambdatest.Context(context.Background(), lambdatest.Invocation{RequestID: reqID, Timeout: 10 * time.Second})
			defer cancel()
			_, _ = fn.Invoke(ctx, payload)
		})
		return
	}
	// The context aws-lambda-go's runtime loop builds for an invocation.
	ctx, cancel := lambdatest.Context(r.Context(), lambdatest.Invocation{
		RequestID:   reqID,
		FunctionARN: "arn:aws:lambda:us-east-1:123456789012:function:" + name,
		Trace:       r.Header.Get("X-Amzn-Trace-Id"),
		Timeout:     10 * time.Second,
	})
	defer cancel()
	out, err := fn.Invoke(ctx, payload)
	if err != nil {
		w.Header().Set("X-Amz-Function-Error", "Unhandled")
		out, _ = json.Marshal(map[string]string{"errorMessage": err.Error(), "errorType": "errorString"})
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// ---- a local JWT issuer ----

type issuer struct {
	*httptest.Server
	key *rsa.PrivateKey
	kid string
}

func newIssuer(t testing.TB) *issuer {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	iss := &issuer{key: key, kid: "test-key-1"}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/jwks.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": []any{map[string]string{
			"kty": "RSA", "kid": iss.kid, "alg": "RS256", "use": "sig",
			"n": base64.RawURLEncoding.EncodeToString(key.N.Bytes()),
			"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(key.E)).Bytes()),
		}}})
	})
	iss.Server = httptest.NewServer(mux)
	t.Cleanup(iss.Close)
	return iss
}

const testAudience = "mcpfn-test"

// token mints a token; edit changes the claims before signing.
func (iss *issuer) token(t testing.TB, sub string, edit func(jwt.MapClaims)) string {
	return iss.tokenWith(t, iss.key, sub, edit)
}

func (iss *issuer) tokenWith(t testing.TB, key *rsa.PrivateKey, sub string, edit func(jwt.MapClaims)) string {
	return iss.sign(t, jwt.SigningMethodRS256, key, iss.kid, sub, edit)
}

func (iss *issuer) sign(t testing.TB, method jwt.SigningMethod, key any, kid, sub string, edit func(jwt.MapClaims)) string {
	now := time.Now()
	claims := jwt.MapClaims{
		"iss": iss.URL, "aud": testAudience, "sub": sub,
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
		"client_id": "test-app", "tenant": "tenant-1", "scope": "things:read",
	}
	if edit != nil {
		edit(claims)
	}
	tok := jwt.NewWithClaims(method, claims)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// ---- the gateway under test ----

type spanLog struct {
	mu    sync.Mutex
	spans []audit.Span
}

func (l *spanLog) EmitSpan(s audit.Span) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.spans = append(l.spans, s)
}

func (l *spanLog) byCall(callID string) (audit.Span, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.spans {
		if s.Annotations["call_id"] == callID {
			return s, true
		}
	}
	return audit.Span{}, false
}

type env struct {
	cat     *catalog
	api     *invokeAPI
	iss     *issuer
	gw      *Gateway
	srv     *httptest.Server
	spans   *spanLog
	mcpURL  string
	cfgUsed Config
	secrets *secretsstandin.Server
	// verifiers are the functions' call-token verifiers, by function name,
	// for tests that replace a function.
	verifiers map[string]*calltoken.Verifier
}

type envOption func(*Config)

// newEnv starts the Invoke API, the issuer and the gateway (JWT mode unless
// an option changes it). The gateway's Lambda client is the real SDK client
// built from the environment, pointed at the Invoke API with
// AWS_ENDPOINT_URL_LAMBDA, as on the local stack.
func newEnv(t testing.TB, opts ...envOption) *env {
	e := &env{cat: testCatalog(t), spans: &spanLog{}, verifiers: map[string]*calltoken.Verifier{}}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	// Each function's call key is a secret in the Secrets Manager stand-in:
	// the gateway loads them through the SDK, as on AWS.
	sm, err := secretsstandin.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sm.Close() })
	secrets := map[string]string{}
	cfg := Config{
		Tools:         e.cat.tools(),
		Functions:     e.cat.functions(),
		Auth:          AuthJWT,
		InvokeTimeout: 2 * time.Second,
		KeySecrets:    secrets,
		Spans:         e.spans,
		Logger:        quiet,
	}
	for _, o := range opts {
		o(&cfg)
	}
	// Tools an option added to the catalog (the task tools) get functions
	// too, with the gateway's tasks table.
	functions, tools := e.cat.functions(), e.cat.tools()
	extra := map[string][]adapter.Option{}
	for _, tl := range cfg.Tools {
		if _, ok := functions[tl.Name()]; !ok {
			functions[tl.Name()], tools = cfg.Functions[tl.Name()], append(tools, tl)
			extra[tl.Name()] = []adapter.Option{adapter.WithTaskStore(cfg.Tasks), adapter.WithTaskWatchInterval(50 * time.Millisecond)}
		}
	}
	fns := map[string]*adapter.Function{}
	smAPI := secretsmanager.NewFromConfig(aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(sm.URL),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", "")})
	for tool, fn := range functions {
		sm.Generate(fn+"-key", 64)
		arn := secretsstandin.ARN(fn + "-key")
		secrets[tool] = arn
		// As a deployed function loads its keys (adapter.Start).
		load := func(ctx context.Context) (*calltoken.Keyring, error) {
			return calltoken.LoadKeyring(ctx, smAPI, arn, time.Hour)
		}
		ring, err := load(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		v, err := calltoken.NewVerifier(calltoken.VerifierConfig{Audience: fn, Keyring: ring, Reload: load})
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range tools {
			if tl.Name() == tool {
				opts := append([]adapter.Option{adapter.WithLogger(quiet), adapter.WithCallVerifier(v)}, extra[tool]...)
				if cfg.Payloads != nil {
					// The claim check, with thresholds small enough for a
					// test (claimcheck_test.go).
					opts = append(opts, adapter.WithPayloads(cfg.PayloadsBucket, cfg.Payloads), adapter.WithClaimCheck(testClaimCheck))
				}
				fns[fn] = adapter.New(tl, opts...)
				e.verifiers[fn] = v
			}
		}
	}
	e.secrets = sm
	e.api = newInvokeAPI(t, fns)
	e.iss = newIssuer(t)
	t.Setenv("AWS_ENDPOINT_URL_LAMBDA", e.api.URL)
	t.Setenv("AWS_ENDPOINT_URL_SECRETS_MANAGER", sm.URL)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	if cfg.Auth == AuthJWT && cfg.JWT.Issuer == "" {
		cfg.JWT = JWTConfig{Issuer: e.iss.URL, Audience: testAudience}
	}
	gw, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Close() })
	e.gw, e.cfgUsed = gw, cfg
	e.srv = httptest.NewServer(gw)
	t.Cleanup(e.srv.Close)
	e.mcpURL = e.srv.URL + "/mcp"
	return e
}

// headerTransport adds headers to every request: a bearer token, and
// whatever a spoofing client would send.
type headerTransport struct {
	base   http.RoundTripper
	header http.Header
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, vs := range h.header {
		r.Header.Del(k)
		for _, v := range vs {
			r.Header.Add(k, v)
		}
	}
	return h.base.RoundTrip(r)
}

func bearer(tok string) http.Header {
	h := http.Header{}
	if tok != "" {
		h.Set("Authorization", "Bearer "+tok)
	}
	return h
}

// connect opens a go-sdk MCP client session. version "" is the SDK's latest
// (the modern era); a legacy version makes the client initialize.
func (e *env) connect(t testing.TB, clientName, version string, header http.Header) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: clientName, Version: "1.0.0"}, nil)
	transport := &mcp.StreamableClientTransport{
		Endpoint:   e.mcpURL,
		HTTPClient: &http.Client{Transport: headerTransport{base: http.DefaultTransport, header: header}},
		MaxRetries: -1,
	}
	var opts *mcp.ClientSessionOptions
	if version != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, transport, opts)
	if err == nil {
		t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

func (e *env) mustConnect(t testing.TB, clientName, version string, header http.Header) *mcp.ClientSession {
	t.Helper()
	cs, err := e.connect(t, clientName, version, header)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	return cs
}

func callTool(t testing.TB, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

func factsFrom(t testing.TB, res *mcp.CallToolResult) facts {
	t.Helper()
	if res.IsError {
		t.Fatalf("tool error: %s", textOf(res))
	}
	var f facts
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("structuredContent %s: %v", b, err)
	}
	return f
}

func textOf(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

type toolError struct {
	Error     string         `json:"error"`
	Message   string         `json:"message"`
	Retryable bool           `json:"retryable"`
	Details   map[string]any `json:"details"`
	Hint      string         `json:"hint"`
}

func (te toolError) callID() string { s, _ := te.Details["callId"].(string); return s }

func toolErrorOf(t testing.TB, res *mcp.CallToolResult) toolError {
	t.Helper()
	if !res.IsError {
		t.Fatalf("want a tool error, got %s", textOf(res))
	}
	var te toolError
	if err := json.Unmarshal([]byte(textOf(res)), &te); err != nil {
		t.Fatalf("error body %q: %v", textOf(res), err)
	}
	return te
}

// post sends one raw HTTP request to the MCP endpoint.
func (e *env) post(t testing.TB, body string, header http.Header) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.mcpURL, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// postWithin returns e.post for requests served with an invocation's
// deadline d after they arrive, as on Lambda (the gateway reads it from
// the request's context and forwards until d less its DeadlineReserve):
// one call of a test can be given little time while the others keep the
// default InvokeTimeout. The gateway serves them in process.
func (e *env) postWithin(d time.Duration) func(testing.TB, string, http.Header) (*http.Response, []byte) {
	return func(t testing.TB, body string, header http.Header) (*http.Response, []byte) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, e.mcpURL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, vs := range header {
			req.Header[k] = vs
		}
		rec := httptest.NewRecorder()
		e.gw.ServeHTTP(rec, req)
		resp := rec.Result()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
}

func newTraceRoot() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("1-%08x-%s", time.Now().Unix(), hex.EncodeToString(b[:]))
}
