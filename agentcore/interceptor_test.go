package agentcore_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/golang-jwt/jwt/v5"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/agentcore"
	"github.com/mcpfn/mcpfn/calltoken"
	"github.com/mcpfn/mcpfn/gateway"
	"github.com/mcpfn/mcpfn/internal/lambdatest"
)

const audience = "mcpfn-agentcore-test"

// issuer is an OpenID provider's JWKS endpoint and its signing key.
type issuer struct {
	url string
	key *rsa.PrivateKey
}

func newIssuer(t *testing.T) *issuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": []any{map[string]string{
			"kty": "RSA", "kid": "k1", "alg": "RS256", "use": "sig",
			"n": base64.RawURLEncoding.EncodeToString(key.N.Bytes()),
			"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(key.E)).Bytes()),
		}}})
	}))
	t.Cleanup(srv.Close)
	return &issuer{url: srv.URL, key: key}
}

func (iss *issuer) token(t *testing.T, key *rsa.PrivateKey, edit func(jwt.MapClaims)) string {
	t.Helper()
	now := time.Now()
	c := jwt.MapClaims{"iss": iss.url, "aud": audience, "sub": "alice", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
		"client_id": "agent-app", "tenant": "acme", "scope": "broadcasts:write"}
	if edit != nil {
		edit(c)
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, c)
	tok.Header["kid"] = "k1"
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type idInput struct {
	ID string `json:"id"`
}

// testCatalog is the interceptor's catalog in these tests: a read tool
// anyone may call and a destructive one that needs broadcasts:write.
func testCatalog() []*adapter.Tool {
	h := func(context.Context, *adapter.Call, idInput) (idInput, error) { return idInput{}, nil }
	return []*adapter.Tool{
		adapter.MustDefine(adapter.ToolDef[idInput, idInput]{Name: "broadcast_get", ReadOnly: true, Handler: h}),
		adapter.MustDefine(adapter.ToolDef[idInput, idInput]{Name: "broadcast_delete", Destructive: true, Scopes: []string{"broadcasts:write"}, Handler: h}),
	}
}

// function is the Lambda function of each tool in these tests.
func function(tool string) string { return "fn-" + strings.ReplaceAll(tool, "_", "-") }

type env struct {
	iss     *issuer
	handler lambda.Handler
}

func newEnv(t *testing.T) *env {
	t.Helper()
	iss := newIssuer(t)
	jv, err := gateway.NewJWTVerifier(context.Background(), gateway.JWTConfig{Issuer: iss.url, Audience: audience, JWKSURL: iss.url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	signer := calltoken.NewSigner(calltoken.SignerInterceptor)
	for _, tool := range testCatalog() {
		signer.Add(tool.Name(), function(tool.Name()), lambdatest.Keyring(function(tool.Name())), nil)
	}
	i, err := agentcore.New(agentcore.Config{Tools: testCatalog(), Signer: signer, JWT: jv,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return &env{iss: iss, handler: lambda.NewHandler(i.Handle)}
}

// intercept invokes the interceptor through its Lambda entry point with an
// event shaped as AgentCore sends it (headers passed, lower-cased).
func (e *env) intercept(t *testing.T, authorization, body string, extra ...map[string]string) (*agentcore.Output, error) {
	t.Helper()
	headers := map[string]string{"content-type": "application/json", "user-agent": "agent/1.0", "mcp-session-id": "s-1"}
	if authorization != "" {
		headers["authorization"] = authorization
	}
	for _, h := range extra {
		for k, v := range h {
			headers[k] = v
		}
	}
	in := map[string]any{
		"interceptorInputVersion": "1.0",
		"mcp": map[string]any{
			"rawGatewayRequest": map[string]any{"body": body},
			"gatewayRequest":    map[string]any{"path": "/mcp", "httpMethod": "POST", "headers": headers, "body": json.RawMessage(body)},
		},
	}
	payload, _ := json.Marshal(in)
	ctx, cancel := lambdatest.Context(context.Background(), lambdatest.Invocation{RequestID: "int-1", Timeout: 10 * time.Second})
	defer cancel()
	raw, err := e.handler.Invoke(ctx, payload)
	if err != nil {
		return nil, err
	}
	var out agentcore.Output
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("output %s: %v", raw, err)
	}
	if out.InterceptorOutputVersion != "1.0" {
		t.Fatalf("interceptorOutputVersion = %q", out.InterceptorOutputVersion)
	}
	return &out, nil
}

const deleteCall = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"broadcasts___broadcast_delete","arguments":{"id":"B1","_mcpfn":{"callToken":"client-made"}},"_meta":{"progressToken":"p"}}}`

// A caller with the tool's scopes gets a call token in the arguments, for
// its function, its tool, its arguments (without _mcpfn) and its verified
// identity; a client-sent _mcpfn is replaced.
func TestToolsCallIsSigned(t *testing.T) {
	e := newEnv(t)
	out, err := e.intercept(t, "Bearer "+e.iss.token(t, e.iss.key, nil), deleteCall)
	if err != nil {
		t.Fatal(err)
	}
	if out.MCP.TransformedGatewayResponse != nil || out.MCP.TransformedGatewayRequest == nil {
		t.Fatalf("output = %+v", out.MCP)
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name      string                     `json:"name"`
			Arguments map[string]json.RawMessage `json:"arguments"`
			Meta      map[string]any             `json:"_meta"`
		} `json:"params"`
	}
	if err := json.Unmarshal(out.MCP.TransformedGatewayRequest.Body, &msg); err != nil {
		t.Fatal(err)
	}
	if string(msg.ID) != "7" || msg.Method != "tools/call" || msg.Params.Name != "broadcasts___broadcast_delete" || msg.Params.Meta["progressToken"] != "p" {
		t.Fatalf("request changed beyond the arguments: %s", out.MCP.TransformedGatewayRequest.Body)
	}
	var reserved struct {
		CallToken string `json:"callToken"`
	}
	if err := json.Unmarshal(msg.Params.Arguments["_mcpfn"], &reserved); err != nil || reserved.CallToken == "" || reserved.CallToken == "client-made" {
		t.Fatalf("_mcpfn = %s", msg.Params.Arguments["_mcpfn"])
	}
	delete(msg.Params.Arguments, "_mcpfn")
	args, _ := json.Marshal(msg.Params.Arguments)
	if string(args) != `{"id":"B1"}` {
		t.Fatalf("arguments = %s", args)
	}
	claims, err := lambdatest.Verifier(function("broadcast_delete")).Verify(context.Background(), reserved.CallToken,
		calltoken.Expect{Tool: "broadcast_delete", Args: args})
	if err != nil {
		t.Fatalf("the function would refuse the token: %v", err)
	}
	c := claims.Caller
	if claims.Issuer != calltoken.SignerInterceptor || claims.CallID == "" || c.Subject != "alice" || c.Issuer != e.iss.url ||
		c.AuthMethod != "jwt" || c.ClientID != "agent-app" || c.Tenant != "acme" || !c.HasScope("broadcasts:write") || c.UserAgent != "agent/1.0" {
		t.Fatalf("claims = %+v caller = %+v", claims, c)
	}
	if exp := time.Until(claims.ExpiresAt.Time); exp <= 0 || exp > agentcore.DefaultTokenTTL {
		t.Fatalf("token valid for %s", exp)
	}
	// Each call its own id.
	again, _ := e.intercept(t, "Bearer "+e.iss.token(t, e.iss.key, nil), deleteCall)
	if strings.Contains(string(again.MCP.TransformedGatewayRequest.Body), claims.CallID) {
		t.Fatal("two calls signed with one call id")
	}
}

// A caller without the tool's scopes is answered by the interceptor: an
// isError FORBIDDEN result in the adapter's error body, no request forwarded.
func TestCallerWithoutScopesIsRefused(t *testing.T) {
	e := newEnv(t)
	tok := e.iss.token(t, e.iss.key, func(c jwt.MapClaims) { c["scope"] = "broadcasts:read" })
	out, err := e.intercept(t, "Bearer "+tok, deleteCall)
	if err != nil {
		t.Fatal(err)
	}
	r := out.MCP.TransformedGatewayResponse
	if out.MCP.TransformedGatewayRequest != nil || r == nil || r.StatusCode != 200 {
		t.Fatalf("output = %+v", out.MCP)
	}
	var resp struct {
		ID     json.RawMessage `json:"id"`
		Result struct {
			IsError bool `json:"isError"`
			Content []struct {
				Type, Text string
			} `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal(r.Body, &resp); err != nil || string(resp.ID) != "7" || !resp.Result.IsError || len(resp.Result.Content) != 1 {
		t.Fatalf("response body = %s", r.Body)
	}
	var body struct {
		Error   string          `json:"error"`
		Details json.RawMessage `json:"details"`
	}
	if err := json.Unmarshal([]byte(resp.Result.Content[0].Text), &body); err != nil || body.Error != "FORBIDDEN" || !strings.Contains(string(body.Details), "broadcasts:write") {
		t.Fatalf("error body = %s", resp.Result.Content[0].Text)
	}
}

// A bearer token that does not verify short-circuits with 401 and a
// JSON-RPC error; nothing is forwarded.
func TestUnverifiedBearerIsUnauthorized(t *testing.T) {
	e := newEnv(t)
	stranger, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	for name, authz := range map[string]string{
		"none":           "",
		"not bearer":     "Basic YWxpY2U6cHc=",
		"junk":           "Bearer junk",
		"expired":        "Bearer " + e.iss.token(t, e.iss.key, func(c jwt.MapClaims) { c["exp"] = time.Now().Add(-time.Hour).Unix() }),
		"other audience": "Bearer " + e.iss.token(t, e.iss.key, func(c jwt.MapClaims) { c["aud"] = "someone-else" }),
		"other issuer":   "Bearer " + e.iss.token(t, e.iss.key, func(c jwt.MapClaims) { c["iss"] = "https://evil.example" }),
		"stranger's key": "Bearer " + e.iss.token(t, stranger, nil),
	} {
		t.Run(name, func(t *testing.T) {
			out, err := e.intercept(t, authz, deleteCall)
			if err != nil {
				t.Fatal(err)
			}
			r := out.MCP.TransformedGatewayResponse
			if out.MCP.TransformedGatewayRequest != nil || r == nil || r.StatusCode != 401 {
				t.Fatalf("output = %+v", out.MCP)
			}
			var resp struct {
				ID    json.RawMessage `json:"id"`
				Error struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(r.Body, &resp); err != nil || string(resp.ID) != "7" || resp.Error.Code != agentcore.RPCUnauthorized ||
				!strings.HasPrefix(resp.Error.Message, "unauthorized") {
				t.Fatalf("body = %s", r.Body)
			}
		})
	}
}

// Every other method is forwarded as it came.
func TestOtherMethodsPassThrough(t *testing.T) {
	e := newEnv(t)
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	} {
		out, err := e.intercept(t, "", body)
		if err != nil {
			t.Fatal(err)
		}
		if out.MCP.TransformedGatewayResponse != nil || out.MCP.TransformedGatewayRequest == nil ||
			string(out.MCP.TransformedGatewayRequest.Body) != body {
			t.Fatalf("%s → %+v", body, out.MCP)
		}
	}
}

// What the interceptor cannot check does not go on.
func TestUncheckableRequestsAreRefused(t *testing.T) {
	e := newEnv(t)
	bearer := "Bearer " + e.iss.token(t, e.iss.key, nil)
	for name, tc := range map[string]struct {
		body   string
		status int
		code   int
	}{
		"batch":             {`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t___broadcast_delete","arguments":{"id":"B1"}}}]`, 400, -32600},
		"unknown tool":      {`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t___nope","arguments":{}}}`, 200, -32602},
		"array arguments":   {`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t___broadcast_delete","arguments":["B1"]}}`, 200, -32602},
		"params not an obj": {`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"x"}`, 200, -32602},
	} {
		t.Run(name, func(t *testing.T) {
			out, err := e.intercept(t, bearer, tc.body)
			if err != nil {
				t.Fatal(err)
			}
			r := out.MCP.TransformedGatewayResponse
			if out.MCP.TransformedGatewayRequest != nil || r == nil || r.StatusCode != tc.status {
				t.Fatalf("output = %+v", out.MCP)
			}
			var resp struct {
				Error struct{ Code int } `json:"error"`
			}
			if json.Unmarshal(r.Body, &resp) != nil || resp.Error.Code != tc.code {
				t.Fatalf("body = %s", r.Body)
			}
		})
	}
	// An event of another version fails the invocation.
	payload := []byte(`{"interceptorInputVersion":"2.0","mcp":{"gatewayRequest":{"body":{}}}}`)
	if _, err := e.handler.Invoke(context.Background(), payload); err == nil {
		t.Fatal("an unknown input version was answered")
	}
}

// A catalog tool without a key stops the cold start.
func TestEveryToolNeedsAKey(t *testing.T) {
	_, err := agentcore.New(agentcore.Config{Tools: testCatalog(), Signer: calltoken.NewSigner(calltoken.SignerInterceptor),
		JWT: verifierFunc(func(context.Context, string) (*calltoken.Identity, error) { return nil, nil })})
	if err == nil || !strings.Contains(err.Error(), "broadcast_delete") {
		t.Fatalf("err = %v", err)
	}
}

type verifierFunc func(context.Context, string) (*calltoken.Identity, error)

func (f verifierFunc) Verify(ctx context.Context, tok string) (*calltoken.Identity, error) {
	return f(ctx, tok)
}

// A multi-round retry's answers and state are signed as forwarded. A
// Lambda target receives the arguments only, so its function refuses the
// retry (token_wrong_round) instead of running it without the client's
// answers; an answer swapped after signing is refused alike.
func TestRoundIsSigned(t *testing.T) {
	e := newEnv(t)
	bearer := "Bearer " + e.iss.token(t, e.iss.key, nil)
	body := `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"t___broadcast_delete","arguments":{"id":"B1"},` +
		`"inputResponses":{"confirm":{"action":"accept","content":{"ok":true}}},"requestState":"sealed-1"}}`
	out, err := e.intercept(t, bearer, body)
	if err != nil || out.MCP.TransformedGatewayRequest == nil {
		t.Fatalf("output = %+v, %v", out, err)
	}
	var msg struct {
		Params struct {
			Arguments struct {
				Reserved struct {
					CallToken string `json:"callToken"`
				} `json:"_mcpfn"`
			} `json:"arguments"`
		} `json:"params"`
	}
	if err := json.Unmarshal(out.MCP.TransformedGatewayRequest.Body, &msg); err != nil {
		t.Fatal(err)
	}
	v := lambdatest.Verifier(function("broadcast_delete"))
	want := calltoken.Expect{Tool: "broadcast_delete", Args: []byte(`{"id":"B1"}`),
		InputResponses: []byte(`{"confirm":{"action":"accept","content":{"ok":true}}}`), RequestState: "sealed-1"}
	if _, err := v.Verify(context.Background(), msg.Params.Arguments.Reserved.CallToken, want); err != nil {
		t.Fatalf("the round as signed: %v", err)
	}
	for name, w := range map[string]calltoken.Expect{
		"as a Lambda target receives it": {Tool: "broadcast_delete", Args: []byte(`{"id":"B1"}`)},
		"another answer": {Tool: "broadcast_delete", Args: []byte(`{"id":"B1"}`),
			InputResponses: []byte(`{"confirm":{"action":"decline"}}`), RequestState: "sealed-1"},
	} {
		if _, err := v.Verify(context.Background(), msg.Params.Arguments.Reserved.CallToken, w); calltoken.ReasonOf(err) != calltoken.ReasonRound {
			t.Errorf("%s: %v; want %s", name, err, calltoken.ReasonRound)
		}
	}
	out, err = e.intercept(t, bearer, strings.Replace(body, `"sealed-1"`, `{"x":1}`, 1))
	if err != nil || out.MCP.TransformedGatewayResponse == nil || !strings.Contains(string(out.MCP.TransformedGatewayResponse.Body), "-32602") {
		t.Fatalf("a requestState that is not a string: %+v, %v", out, err)
	}
}

// Parser differentials: a body AgentCore's parser could read otherwise than
// the interceptor's is refused (400, -32600) before anything is decided on
// it, whatever its method; so is a method name a folding parser or router
// could take for tools/call, and a Mcp-Method or Mcp-Name header that
// disagrees with the body.
func TestAmbiguousRequestsAreRefused(t *testing.T) {
	e := newEnv(t)
	bearer := "Bearer " + e.iss.token(t, e.iss.key, nil)
	const args = `"arguments":{"id":"B1"}`
	for name, tc := range map[string]struct {
		body    string
		headers map[string]string
		status  int
		code    int
	}{
		"method twice, list last": {`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t___broadcast_delete",` + args + `},"method":"tools/list"}`, nil, 400, -32600},
		"method twice, call last": {`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"t___broadcast_delete",` + args + `},"method":"tools/call"}`, nil, 400, -32600},
		"method twice, escaped":   {`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t___broadcast_delete",` + args + `},"\u006dethod":"ping"}`, nil, 400, -32600},
		"method in two cases":     {`{"jsonrpc":"2.0","id":1,"Method":"tools/call","method":"ping","params":{}}`, nil, 400, -32600},
		"params twice":            {`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t___broadcast_get",` + args + `},"params":{"name":"t___broadcast_delete",` + args + `}}`, nil, 400, -32600},
		"name twice":              {`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t___broadcast_get","name":"t___broadcast_delete",` + args + `}}`, nil, 400, -32600},
		"arguments in two cases":  {`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t___broadcast_delete","Arguments":{"id":"B2"},` + args + `}}`, nil, 400, -32600},
		"argument twice":          {`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t___broadcast_delete","arguments":{"id":"B1","id":"B2"}}}`, nil, 400, -32600},
		"deep key twice":          {`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t___broadcast_delete","arguments":{"id":"B1","x":[{"a":1,"a":2}]}}}`, nil, 400, -32600},
		"key twice in tools/list": {`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"a","cursor":"b"}}`, nil, 400, -32600},
		"not UTF-8":               {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"cursor\":\"\xff\"}}", nil, 400, -32600},
		"method a number":         {`{"jsonrpc":"2.0","id":1,"method":5,"params":{}}`, nil, 400, -32600},
		"no method":               {`{"jsonrpc":"2.0","id":1,"params":{"name":"t___broadcast_delete",` + args + `}}`, nil, 400, -32600},
		"tools/call in capitals":  {`{"jsonrpc":"2.0","id":1,"method":"Tools/Call","params":{"name":"t___broadcast_delete",` + args + `}}`, nil, 400, -32601},
		"tools/call and a NUL":    {`{"jsonrpc":"2.0","id":1,"method":"tools/call\u0000","params":{"name":"t___broadcast_delete",` + args + `}}`, nil, 400, -32600},
		"Mcp-Method disagrees":    {`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`, map[string]string{"mcp-method": "tools/call"}, 400, -32020},
		"Mcp-Name disagrees":      {`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t___broadcast_get",` + args + `}}`, map[string]string{"Mcp-Name": "t___broadcast_delete"}, 400, -32020},
	} {
		t.Run(name, func(t *testing.T) {
			out, err := e.intercept(t, bearer, tc.body, tc.headers)
			if err != nil {
				t.Fatal(err)
			}
			r := out.MCP.TransformedGatewayResponse
			if out.MCP.TransformedGatewayRequest != nil || r == nil || r.StatusCode != tc.status {
				t.Fatalf("output = %+v", out.MCP)
			}
			var resp struct {
				Error struct {
					Code    int
					Message string
				} `json:"error"`
			}
			if json.Unmarshal(r.Body, &resp) != nil || resp.Error.Code != tc.code || resp.Error.Message == "" {
				t.Fatalf("body = %s; want code %d", r.Body, tc.code)
			}
		})
	}
	// Keys that differ in case below params are the tool's business.
	out, err := e.intercept(t, bearer, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t___broadcast_delete","arguments":{"id":"B1","ID":"b1"}}}`)
	if err != nil || out.MCP.TransformedGatewayRequest == nil {
		t.Fatalf("arguments with keys in two cases: %+v, %v", out, err)
	}
	// Headers that agree pass.
	out, err = e.intercept(t, bearer, deleteCall, map[string]string{"mcp-method": "tools/call", "mcp-name": "broadcasts___broadcast_delete"})
	if err != nil || out.MCP.TransformedGatewayRequest == nil {
		t.Fatalf("matching headers: %+v, %v", out, err)
	}
}
