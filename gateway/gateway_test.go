package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/adapter"
)

// canonical re-encodes JSON with sorted keys and no insignificant space.
// listingOf is tool's tools/list entry as the function lists it.
func listingOf(t testing.TB, tool *adapter.Tool) adapter.Listing {
	t.Helper()
	l, err := tool.Listing()
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func canonical(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(x)
	return string(out)
}

func TestToolsListIsTheCatalog(t *testing.T) {
	e := newEnv(t)
	// A caller holding every scope sees the whole catalog.
	tok := e.iss.token(t, "alice", func(c jwt.MapClaims) { c["scope"] = "things:write" })
	for _, version := range []string{"", "2025-11-25", "2025-03-26"} {
		t.Run("version="+version, func(t *testing.T) {
			cs := e.mustConnect(t, "lister", version, bearer(tok))
			res, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Tools) != len(e.cat.tools()) {
				t.Fatalf("listed %d tools, catalog has %d", len(res.Tools), len(e.cat.tools()))
			}
			listed := map[string]*mcp.Tool{}
			for _, tl := range res.Tools {
				listed[tl.Name] = tl
			}
			for _, want := range e.cat.tools() {
				got, ok := listed[want.Name()]
				if !ok {
					t.Fatalf("tool %s not listed", want.Name())
				}
				if g, w := canonical(t, got), canonical(t, listingOf(t, want)); g != w {
					t.Errorf("tool %s differs from its definition:\n got  %s\n want %s", want.Name(), g, w)
				}
			}
		})
	}
}

func TestCallCarriesVerifiedFactsModern(t *testing.T) {
	e := newEnv(t)
	tok := e.iss.token(t, "alice", nil)
	root := newTraceRoot()
	h := bearer(tok)
	h.Set("X-Amzn-Trace-Id", "Root="+root+";Parent=53995c3f42cd8ad8;Sampled=1")
	cs := e.mustConnect(t, "modern-client", "", h)
	f := factsFrom(t, callTool(t, cs, "echo_call", map[string]any{"entityId": "e-1"}))

	if f.Source != "envelope" || f.EntityID != "e-1" || !strings.HasSuffix(f.FunctionARN, ":function:fn-echo") {
		t.Fatalf("facts = %+v", f)
	}
	if f.Subject != "alice" || f.AuthMethod != "jwt" || f.ClientID != "test-app" || f.Tenant != "tenant-1" ||
		!slices.Equal(f.Scopes, []string{"things:read"}) {
		t.Errorf("identity = %+v", f)
	}
	if f.Era != "modern" || f.ProtocolVersion != "2026-07-28" || f.ClientName != "modern-client" {
		t.Errorf("mcp facts: era=%q version=%q client=%q", f.Era, f.ProtocolVersion, f.ClientName)
	}
	if f.JSONRPCID == "" {
		t.Error("the JSON-RPC id did not reach the function")
	}
	if len(f.CallID) != 32 {
		t.Errorf("call id %q: want the gateway's 128-bit hex id", f.CallID)
	}
	// The caller's trace reaches the function, with the gateway's
	// subsegment as its parent; that subsegment is the caller's child.
	sp, ok := e.spans.byCall(f.CallID)
	if !ok {
		t.Fatalf("no gateway span for call %s", f.CallID)
	}
	if f.TraceRoot != root || f.TraceParent != sp.ID || f.TraceFrom != "lambda" {
		t.Errorf("function trace root=%q parent=%q from=%q; want root %q parent %q", f.TraceRoot, f.TraceParent, f.TraceFrom, root, sp.ID)
	}
	// The envelope travels in the payload; client context stays unset.
	for _, h := range e.api.headers {
		if h.Get("X-Amz-Client-Context") != "" || h.Get("X-Amz-Invocation-Type") == "Event" {
			t.Errorf("invoke headers %v", h)
		}
	}
	if sp.TraceID != root || sp.ParentID != "53995c3f42cd8ad8" || sp.Name != "fn-echo" || sp.Annotations["tool"] != "echo_call" ||
		sp.Metadata["mcpfn"]["lambdaRequestId"] != f.LambdaRequestID || sp.Annotations["outcome"] != "ok" || sp.Error || sp.Fault || !sp.End.After(sp.Start) {
		t.Errorf("span = %+v", sp)
	}
}

func TestMalformedCallerTraceIsDropped(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Auth = AuthNone })
	for _, h := range []string{"Root=<script>;Parent=53995c3f42cd8ad8", "Root=" + newTraceRoot() + ";Parent=xyz", "Sampled=1"} {
		cs := e.mustConnect(t, "c", "", http.Header{"X-Amzn-Trace-Id": {h}})
		if f := factsFrom(t, callTool(t, cs, "echo_call", map[string]any{"entityId": "m"})); f.TraceFrom != "new" || f.TraceParent != "" {
			t.Errorf("header %q reached the function as %q/%q (from %q)", h, f.TraceRoot, f.TraceParent, f.TraceFrom)
		}
	}
}

func TestCallLegacyEras(t *testing.T) {
	e := newEnv(t)
	tok := e.iss.token(t, "bob", nil)
	// As on Lambda: the process-wide trace variable (shared by concurrent
	// invocations on Managed Instances) must not leak into a forward that
	// has no trace of its own.
	t.Setenv("AWS_LAMBDA_FUNCTION_NAME", "gateway")
	t.Setenv("_X_AMZN_TRACE_ID", "Root=1-00000000-000000000000000000000000;Parent=2222222222222222;Sampled=1")
	for _, version := range []string{"2025-11-25", "2025-06-18", "2025-03-26"} {
		t.Run(version, func(t *testing.T) {
			cs := e.mustConnect(t, "legacy-client", version, bearer(tok))
			f := factsFrom(t, callTool(t, cs, "echo_call", map[string]any{"entityId": "e-" + version}))
			if f.Era != "legacy" || f.ProtocolVersion != version || f.Subject != "bob" {
				t.Errorf("facts = %+v", f)
			}
			// A stateless legacy request carries no client info (it was
			// sent once, in initialize, on another request): none is
			// invented.
			if f.ClientName != "" {
				t.Errorf("client name %q invented for a stateless legacy call", f.ClientName)
			}
			// No trace header from the caller: no invented parent; the
			// function starts a trace of its own.
			if f.TraceFrom != "new" || f.TraceParent != "" {
				t.Errorf("trace %q/%q invented (from %q)", f.TraceRoot, f.TraceParent, f.TraceFrom)
			}
		})
	}
}

func TestBatchOf20RunsConcurrently(t *testing.T) {
	e := newEnv(t)
	tok := e.iss.token(t, "carol", nil)
	var msgs []string
	for i := range 20 {
		msgs = append(msgs, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"meet_together","arguments":{"entityId":"ent-%02d"}}}`, 100+i, i))
	}
	// A notification in the batch gets no response element.
	msgs = append(msgs, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	start := time.Now()
	// A 2025-03-26 client sends no Mcp-Protocol-Version header.
	resp, body := e.post(t, "["+strings.Join(msgs, ",")+"]", bearer(tok))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	var out []struct {
		ID     int                 `json:"id"`
		Result *mcp.CallToolResult `json:"result"`
		Error  any                 `json:"error"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if len(out) != 20 {
		t.Fatalf("%d responses, want 20: %s", len(out), body)
	}
	seenCalls := map[string]bool{}
	for i, r := range out {
		if r.ID != 100+i || r.Result == nil {
			t.Fatalf("response %d: %+v", i, r)
		}
		f := factsFrom(t, r.Result)
		if want := fmt.Sprintf("ent-%02d", i); f.EntityID != want {
			t.Errorf("response %d has entity %q, want %q", i, f.EntityID, want)
		}
		if f.JSONRPCID != fmt.Sprint(100+i) || f.Subject != "carol" || f.Era != "legacy" || f.ProtocolVersion != "2025-03-26" {
			t.Errorf("response %d facts %+v", i, f)
		}
		if seenCalls[f.CallID] {
			t.Errorf("call id %s reused", f.CallID)
		}
		seenCalls[f.CallID] = true
	}
	if got := e.api.count("fn-together"); got != 20 {
		t.Errorf("%d invocations, want 20", got)
	}
	t.Logf("batch of 20 through the barrier in %v", time.Since(start))

	// Notifications only: accepted, no body.
	if resp, body := e.post(t, `[{"jsonrpc":"2.0","method":"notifications/initialized"}]`, bearer(tok)); resp.StatusCode != http.StatusAccepted || len(body) != 0 {
		t.Errorf("notifications only: %d %s", resp.StatusCode, body)
	}
	// A bad element fails alone.
	resp, body = e.post(t, `[{"jsonrpc":"2.0","id":1,"method":"no/such"},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo_call","arguments":{"entityId":"ok"}}}]`, bearer(tok))
	var mixed []struct {
		ID     int                 `json:"id"`
		Result *mcp.CallToolResult `json:"result"`
		Error  *struct{ Code int } `json:"error"`
	}
	if err := json.Unmarshal(body, &mixed); err != nil || len(mixed) != 2 || mixed[0].ID != 1 || mixed[0].Error == nil || mixed[1].ID != 2 || mixed[1].Result == nil {
		t.Errorf("mixed batch: %d %s", resp.StatusCode, body)
	} else if f := factsFrom(t, mixed[1].Result); f.EntityID != "ok" || f.JSONRPCID != "2" {
		t.Errorf("mixed batch call: %+v", f)
	}
	if resp, body := e.post(t, `[]`, bearer(tok)); resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "-32600") {
		t.Errorf("empty batch: %d %s", resp.StatusCode, body)
	}

	// Batches are not part of later protocol versions.
	h := bearer(tok)
	h.Set("Mcp-Protocol-Version", "2025-06-18")
	if resp, body := e.post(t, "["+msgs[0]+"]", h); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("2025-06-18 batch: status %d: %s", resp.StatusCode, body)
	}
}

func TestSpoofedAttributionNeverBecomesIdentity(t *testing.T) {
	e := newEnv(t)
	tok := e.iss.token(t, "mallory", func(c jwt.MapClaims) { c["tenant"] = "tenant-m" })
	h := bearer(tok)
	h.Set("Mcp-Session-Id", "session-of-alice")
	h.Set("X-User", "alice")
	h.Set("X-Forwarded-User", "alice")
	h.Set("X-Amz-Caller-Id", "arn:aws:iam::111111111111:user/alice")
	cs := e.mustConnect(t, "alice", "", h)

	// A client that also claims alice in the request's own _meta.
	ctx := context.Background()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{
		Name: "echo_call", Arguments: map[string]any{"entityId": "x"},
		Meta: mcp.Meta{"io.modelcontextprotocol/clientInfo": map[string]any{"name": "alice", "version": "9"}, "user": "alice"},
	})
	if err != nil {
		t.Fatal(err)
	}
	f := factsFrom(t, res)
	if f.Subject != "mallory" || f.Tenant != "tenant-m" {
		t.Fatalf("identity became %q/%q", f.Subject, f.Tenant)
	}
	if f.ClientName != "alice" || f.SessionID != "session-of-alice" {
		// Passed on as what they are: attribution and caller data.
		t.Errorf("client name %q, session %q: want them passed through as attribution", f.ClientName, f.SessionID)
	}

	// Without authentication (auth none) the same headers give no identity.
	open := newEnv(t, func(c *Config) { c.Auth = AuthNone })
	cs = open.mustConnect(t, "admin", "", h)
	f = factsFrom(t, callTool(t, cs, "echo_call", map[string]any{"entityId": "y"}))
	if f.Subject != "" || f.AuthMethod != "" || f.Tenant != "" {
		t.Fatalf("auth none produced identity %+v", f)
	}
	// And a scoped tool fails closed.
	if te := toolErrorOf(t, callTool(t, cs, "thing_delete", map[string]any{"entityId": "y"})); te.Error != "UNAUTHORIZED" {
		t.Fatalf("scoped tool without identity: %+v", te)
	}
}

func TestTokenRejections(t *testing.T) {
	e := newEnv(t)
	other := newIssuer(t)
	cases := map[string]string{
		"missing":        "",
		"wrong audience": e.iss.token(t, "alice", func(c jwt.MapClaims) { c["aud"] = "someone-else" }),
		"expired":        e.iss.token(t, "alice", func(c jwt.MapClaims) { c["exp"] = time.Now().Add(-time.Hour).Unix() }),
		"bad signature":  e.iss.tokenWith(t, other.key, "alice", nil),
		"wrong issuer":   e.iss.token(t, "alice", func(c jwt.MapClaims) { c["iss"] = other.URL }),
		"no expiry":      e.iss.token(t, "alice", func(c jwt.MapClaims) { delete(c, "exp") }),
		"garbage":        "not.a.jwt",
		"alg none":       e.iss.sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, e.iss.kid, "alice", nil),
		"unknown kid":    e.iss.sign(t, jwt.SigningMethodRS256, other.key, "kid-nobody-published", "alice", nil),
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`
	for name, tok := range cases {
		t.Run(name, func(t *testing.T) {
			resp, body := e.post(t, init, bearer(tok))
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			want := `Bearer resource_metadata="` + e.srv.URL + `/.well-known/oauth-protected-resource/mcp"`
			if got := resp.Header.Get("WWW-Authenticate"); got != want {
				t.Errorf("WWW-Authenticate = %q, want %q", got, want)
			}
			// The go-sdk client cannot get in either.
			if _, err := e.connect(t, "c", "", bearer(tok)); err == nil {
				t.Error("the MCP client connected")
			}
		})
	}

	// The challenge points at RFC 9728 metadata naming the issuer.
	resp, err := http.Get(e.srv.URL + "/.well-known/oauth-protected-resource/mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var md struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
		ScopesSupported      []string `json:"scopes_supported"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&md); err != nil {
		t.Fatal(err)
	}
	if md.Resource != e.mcpURL || !slices.Equal(md.AuthorizationServers, []string{e.iss.URL}) || !slices.Contains(md.ScopesSupported, "things:write") {
		t.Errorf("metadata = %+v", md)
	}
}

func TestInsufficientScopeIsTheToolsForbidden(t *testing.T) {
	e := newEnv(t)
	reader := e.mustConnect(t, "c", "", bearer(e.iss.token(t, "alice", nil)))
	te := toolErrorOf(t, callTool(t, reader, "thing_delete", map[string]any{"entityId": "t-1"}))
	if te.Error != "FORBIDDEN" || te.Retryable {
		t.Fatalf("got %+v", te)
	}
	writer := e.mustConnect(t, "c", "", bearer(e.iss.token(t, "alice", func(c jwt.MapClaims) {
		c["scope"] = "things:read things:write"
	})))
	if f := factsFrom(t, callTool(t, writer, "thing_delete", map[string]any{"entityId": "t-1"})); f.Subject != "alice" {
		t.Fatalf("facts %+v", f)
	}
	// "scp" as a list works too.
	scp := e.mustConnect(t, "c", "", bearer(e.iss.token(t, "alice", func(c jwt.MapClaims) {
		delete(c, "scope")
		c["scp"] = []string{"things:write"}
	})))
	if f := factsFrom(t, callTool(t, scp, "thing_delete", map[string]any{"entityId": "t-2"})); !slices.Equal(f.Scopes, []string{"things:write"}) {
		t.Fatalf("facts %+v", f)
	}
}

// TestFunctionFailuresBecomeToolErrors: each way an Invoke fails is a tool
// error with its code, retryable or not, and a span saying so; nothing of
// the function's or the account's leaks. The gateway's own timeouts run
// on a gateway with a 500 ms InvokeTimeout, against a function that
// answers only once the gateway has given up; every other case on one
// with the default, so that no answer depends on how fast a loaded
// machine makes the round trip (before, a throttle's answer that took
// more than 500 ms came back TIMEOUT).
func TestFunctionFailuresBecomeToolErrors(t *testing.T) {
	type target struct {
		e  *env
		cs *mcp.ClientSession
	}
	connect := func(opts ...envOption) target {
		e := newEnv(t, opts...)
		h := bearer(e.iss.token(t, "alice", nil))
		h.Set("X-Amzn-Trace-Id", "Root="+newTraceRoot()+";Parent=53995c3f42cd8ad8;Sampled=1")
		return target{e, e.mustConnect(t, "c", "", h)}
	}
	plain, short := connect(), connect(func(c *Config) { c.InvokeTimeout = 500 * time.Millisecond })
	crash := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Amz-Function-Error", "Unhandled")
		_, _ = w.Write([]byte(`{"errorType":"Runtime.ExitError","errorMessage":"RequestId: x Error: Runtime exited with error: signal: killed"}`))
	}
	lambdaTimeout := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Amz-Function-Error", "Unhandled")
		_, _ = w.Write([]byte(`{"errorType":"Sandbox.Timedout","errorMessage":"RequestId: x Error: Task timed out after 3.00 seconds"}`))
	}
	throttle := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Amzn-ErrorType", "TooManyRequestsException")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`{"Reason":"ReservedFunctionConcurrentInvocationLimitExceeded","Type":"User","message":"Rate Exceeded."}`))
	}
	serviceError := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Amzn-ErrorType", "ServiceException")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(`{"Type":"Service","message":"internal failure"}`))
	}
	notFound := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Amzn-ErrorType", "ResourceNotFoundException")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"Type":"User","message":"Function not found: arn:aws:lambda:us-east-1:123456789012:function:fn-flaky"}`))
	}
	// The function never answers: the call ends when the gateway gives up.
	hang := func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }
	cases := []struct {
		name, tool, fn string
		h              http.HandlerFunc
		code           string
		retryable      bool
		gw             target
	}{
		{"crash", "flaky_get", "fn-flaky", crash, "UNAVAILABLE", true, plain},
		{"function timeout", "flaky_get", "fn-flaky", lambdaTimeout, "TIMEOUT", true, plain},
		{"throttled", "flaky_get", "fn-flaky", throttle, "RATE_LIMITED", true, plain},
		{"service error", "flaky_get", "fn-flaky", serviceError, "UNAVAILABLE", true, plain},
		{"gateway timeout", "flaky_get", "fn-flaky", hang, "TIMEOUT", true, short},
		{"function not found", "flaky_get", "fn-flaky", notFound, "INTERNAL_SERVER_ERROR", false, plain},
		// A destructive tool whose call may have taken effect is not
		// retryable; one Lambda refused to run is.
		{"destructive crash", "flaky_delete", "fn-flaky-delete", crash, "UNAVAILABLE", false, plain},
		{"destructive timeout", "flaky_delete", "fn-flaky-delete", hang, "TIMEOUT", false, short},
		{"destructive throttled", "flaky_delete", "fn-flaky-delete", throttle, "RATE_LIMITED", true, plain},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, cs := c.gw.e, c.gw.cs
			e.api.setMisbehave(c.fn, c.h)
			before := e.api.count(c.fn)
			res := callTool(t, cs, c.tool, map[string]any{"entityId": "f-1"})
			te := toolErrorOf(t, res)
			if te.Error != c.code || te.Retryable != c.retryable || len(te.callID()) != 32 {
				t.Errorf("got %+v, want %s retryable=%v", te, c.code, c.retryable)
			}
			if strings.Contains(textOf(res), "fn-") || strings.Contains(textOf(res), "Runtime") || strings.Contains(textOf(res), "123456789012") {
				t.Errorf("raw cause leaked to the model: %s", textOf(res))
			}
			// No retry loop: at most InvokeAttempts (2) Invokes. (A
			// missed deadline leaves a hanging call hanging: callTool
			// fails.)
			if n := e.api.count(c.fn) - before; n < 1 || n > 2 {
				t.Errorf("%d Invokes, want 1 or 2", n)
			}
			sp, ok := e.spans.byCall(te.callID())
			if !ok || !(sp.Error || sp.Fault) || sp.Annotations["error_code"] != c.code {
				t.Errorf("span %+v", sp)
			}
			// The gateway keeps serving, and the function works again once
			// it behaves.
			e.api.setMisbehave(c.fn, nil)
			if f := factsFrom(t, callTool(t, cs, c.tool, map[string]any{"entityId": "f-2"})); f.EntityID != "f-2" {
				t.Fatalf("after %s: %+v", c.name, f)
			}
		})
	}
}

// TestThrottledInvokeIsRetriedOnce: a throttle is retried once by the SDK
// (InvokeAttempts 2) with the same call id. The retry waits up to 400 ms
// of backoff (retry.go), so it needs a forward deadline longer than that:
// this was a check at the end of TestFunctionFailuresBecomeToolErrors,
// whose 500 ms InvokeTimeout (for its hanging function's sake) left the
// retry only what the first attempt had not used; on a loaded machine the
// deadline came first and the call was, rightly, not sent again.
func TestThrottledInvokeIsRetriedOnce(t *testing.T) {
	e := newEnv(t)
	cs := e.mustConnect(t, "c", "", bearer(e.iss.token(t, "alice", nil)))
	e.api.setMisbehave("fn-flaky", throttle429)
	before := e.api.count("fn-flaky")
	if te := toolErrorOf(t, callTool(t, cs, "flaky_get", map[string]any{"entityId": "f-3"})); te.Error != "RATE_LIMITED" {
		t.Errorf("got %+v, want RATE_LIMITED", te)
	}
	if got := e.api.count("fn-flaky") - before; got != 2 {
		t.Errorf("%d attempts for a throttled call, want 2", got)
	}
}

func TestFunctionProtocolErrorIsJSONRPCError(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Functions["flaky_get"] = "fn-echo" }) // routed to a function serving another tool
	cs := e.mustConnect(t, "c", "", bearer(e.iss.token(t, "alice", nil)))
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "flaky_get", Arguments: map[string]any{"entityId": "z"}})
	if err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Fatalf("err = %v", err)
	}
	// A tool the catalog does not have never reaches Lambda.
	before := e.api.count("fn-echo")
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "nope", Arguments: map[string]any{}}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Fatalf("unknown tool: err = %v", err)
	}
	// Still serving.
	factsFrom(t, callTool(t, cs, "echo_call", map[string]any{"entityId": "z"}))
	if got := e.api.count("fn-echo") - before; got != 1 {
		t.Errorf("%d invocations of fn-echo, want 1 (the echo)", got)
	}
}

func TestHTTPRejections(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxBodyBytes = 4096 })
	tok := bearer(e.iss.token(t, "alice", nil))
	big := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo_call","arguments":{"entityId":"` + strings.Repeat("x", 5000) + `"}}}`
	if resp, body := e.post(t, big, tok); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("over the limit: %d %s", resp.StatusCode, body)
	}
	// Chunked, so no Content-Length announces the size.
	req, _ := http.NewRequest(http.MethodPost, e.mcpURL, struct{ *strings.Reader }{strings.NewReader(big)})
	req.Header = tok.Clone()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("chunked over the limit: %v %v", resp.StatusCode, err)
	} else {
		resp.Body.Close()
	}

	req, _ = http.NewRequest(http.MethodPost, e.mcpURL, strings.NewReader(`{}`))
	req.Header = tok.Clone()
	req.Header.Set("Content-Type", "text/plain")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain: %v %v", resp.StatusCode, err)
	} else {
		resp.Body.Close()
	}

	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		req, _ = http.NewRequest(m, e.mcpURL, nil)
		req.Header = tok.Clone()
		req.Header.Set("Accept", "text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" {
			t.Errorf("%s: %v %v", m, resp.StatusCode, err)
		}
		resp.Body.Close()
	}

	// A non-loopback Host at a loopback listener (DNS rebinding) is refused.
	req, _ = http.NewRequest(http.MethodPost, e.mcpURL, strings.NewReader(`{}`))
	req.Host = "evil.example"
	req.Header = tok.Clone()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("rebinding host: %v %v", resp.StatusCode, err)
	} else {
		resp.Body.Close()
	}
}

func TestSubscriptionsListenIsRefused(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Auth = AuthNone })
	h := http.Header{"Mcp-Protocol-Version": {"2026-07-28"}}
	// Answered and closed, not a stream held open: the body was read to its
	// end, and it is one JSON answer, on 2026-07-28's status for -32601.
	resp, body := e.post(t, `{"jsonrpc":"2.0","id":5,"method":"subscriptions/listen","params":{"notifications":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, h)
	if resp.StatusCode != http.StatusNotFound || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") ||
		!strings.Contains(string(body), `"code":-32601`) || !strings.Contains(string(body), `"id":5`) {
		t.Fatalf("%d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
}

func TestHostAndOriginAllowLists(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.Auth = AuthNone
		c.AllowedHosts = []string{"abc123.lambda-url.us-east-1.on.aws"}
		c.AllowedOrigins = []string{"https://app.example.com"}
	})
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`
	do := func(host, origin string) int {
		req, _ := http.NewRequest(http.MethodPost, e.mcpURL, strings.NewReader(list))
		req.Host = host
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if origin != "" {
			req.Header.Set("Origin", origin)
			req.Header.Set("Sec-Fetch-Site", "cross-site")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// The allow-list replaces the loopback check: this is how the gateway
	// sits behind a Function URL, whose Host is not loopback.
	if got := do("abc123.lambda-url.us-east-1.on.aws", ""); got != http.StatusOK {
		t.Errorf("allowed host: %d", got)
	}
	if got := do("abc123.lambda-url.us-east-1.on.aws:443", ""); got != http.StatusOK {
		t.Errorf("allowed host with port: %d", got)
	}
	if got := do("evil.example", ""); got != http.StatusForbidden {
		t.Errorf("other host: %d", got)
	}
	if got := do("abc123.lambda-url.us-east-1.on.aws", "https://app.example.com"); got != http.StatusOK {
		t.Errorf("allowed origin: %d", got)
	}
	if got := do("abc123.lambda-url.us-east-1.on.aws", "https://evil.example"); got != http.StatusForbidden {
		t.Errorf("other origin: %d", got)
	}
}
