package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/internal/secretsstandin"
	"github.com/mcpfn/mcpfn/wire"
)

// ---- a tool that holds its calls ----

// heldTool's handler holds each call until the test releases its entity or
// the call's context ends, and reports both: the tests wait on these
// events, never on time.
const heldTool = "held_call"

type holdIn struct {
	EntityID string `json:"entityId"`
}

type holds struct {
	started chan string // the entity of each call whose handler started
	stopped chan string // the entity of each call whose context ended first
	mu      sync.Mutex
	gates   map[string]chan struct{}
	calls   map[string]string // entity → call id
}

func newHolds() *holds {
	return &holds{started: make(chan string, 16), stopped: make(chan string, 16), gates: map[string]chan struct{}{}, calls: map[string]string{}}
}

func (h *holds) gate(entity string) chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.gates[entity] == nil {
		h.gates[entity] = make(chan struct{})
	}
	return h.gates[entity]
}

// release lets the call of entity answer.
func (h *holds) release(entity string) { close(h.gate(entity)) }

// callID is the call id of entity's call, once its handler started.
func (h *holds) callID(entity string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls[entity]
}

func (h *holds) handler(ctx context.Context, call *adapter.Call, in holdIn) (facts, error) {
	h.mu.Lock()
	h.calls[in.EntityID] = call.ID
	h.mu.Unlock()
	h.started <- in.EntityID
	select {
	case <-ctx.Done():
		h.stopped <- in.EntityID
		return facts{}, ctx.Err()
	case <-h.gate(in.EntityID):
		return factsOf(call, in.EntityID), nil
	}
}

// withHeld adds heldTool to a gateway with a tasks table (withTasks): its
// function watches cancel markers every 50 ms.
func withHeld(h *holds) envOption {
	return func(c *Config) {
		c.Tools = append(c.Tools, adapter.MustDefine(adapter.ToolDef[holdIn, facts]{
			Name: heldTool, Description: "Holds a call until released.", Handler: h.handler}))
		c.Functions[heldTool] = "fn-" + heldTool
	}
}

// ---- raw requests ----

const legacyVersion = "2025-11-25"

// send posts body with the bearer token and headers h (a header whose value
// is "" is left out), under ctx.
func (e *env) send(ctx context.Context, t *testing.T, token, body string, h map[string]string) (*http.Response, []byte, error) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.mcpURL, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	for k, v := range h {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

// initialize opens a legacy session and returns the session id the
// gateway minted ("" when none).
func (e *env) initialize(t *testing.T, token string) string {
	t.Helper()
	resp, b, err := e.send(t.Context(), t, token, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+legacyVersion+
		`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("initialize: %v %s", err, b)
	}
	return resp.Header.Get("Mcp-Session-Id")
}

// legacyCall is a 2025-11-25 tools/call of heldTool with JSON-RPC id 7.
func legacyCall(entity string) string {
	return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + heldTool + `","arguments":{"entityId":"` + entity + `"}}}`
}

// modernCall is the same call in the 2026-07-28 era, and its headers.
func modernCall(entity string) (string, map[string]string) {
	return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + heldTool + `","arguments":{"entityId":"` + entity + `"},` +
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
		map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": heldTool}
}

// taskRequest sends a 2026-07-28 tasks method for taskID, declaring the
// extension, with the headers the era requires overridden by h (a value ""
// removes the header); it returns the status and body.
func (e *env) taskRequest(t *testing.T, token, method, taskID string, h map[string]string) (int, []byte) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{"taskId":"` + taskID + `","_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"` + TasksExtension + `":{}}}}}}`
	headers := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": method, "Mcp-Name": taskID}
	for k, v := range h {
		headers[k] = v
	}
	resp, b, err := e.send(t.Context(), t, token, body, headers)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// cancelled is a notifications/cancelled of request 7.
func cancelled(id string) string {
	return `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + id + `,"reason":"test"}}`
}

// answer runs a call in the background; its outcome arrives on the channel.
func (e *env) answer(ctx context.Context, t *testing.T, token, body string, h map[string]string) <-chan *mcp.CallToolResult {
	out := make(chan *mcp.CallToolResult, 1)
	go func() {
		resp, b, err := e.send(ctx, t, token, body, h)
		if err != nil {
			out <- nil // the test cancelled the request
			return
		}
		var msg struct {
			Result *mcp.CallToolResult `json:"result"`
		}
		if json.Unmarshal(b, &msg) != nil || msg.Result == nil {
			t.Errorf("call answered %d %s", resp.StatusCode, b)
		}
		out <- msg.Result
	}()
	return out
}

func receive[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10 s")
		var zero T
		return zero
	}
}

// marked reports whether the tasks table holds the cancel marker owner,
// key written since t0.
func (e *env) marked(t *testing.T, owner, key string, t0 time.Time) bool {
	t.Helper()
	ok, err := e.cfgUsed.Tasks.CancelledSince(t.Context(), owner, key, t0)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// ---- the tests ----

// TestSessionIDsAreMintedOnInitializeAndBoundToTheirOwner: a successful
// initialize gets an Mcp-Session-Id, another for every initialize, which
// verifies for its caller only; a refused initialize and a 2026-07-28
// request get none.
func TestSessionIDsAreMintedOnInitializeAndBoundToTheirOwner(t *testing.T) {
	e := newEnv(t)
	alice, bob := e.alice(t), e.iss.token(t, "bob", nil)
	a1, a2 := e.initialize(t, alice), e.initialize(t, alice)
	if a1 == "" || a2 == "" || a1 == a2 {
		t.Fatalf("session ids %q and %q: want two different ones", a1, a2)
	}
	for _, b := range []byte(a1) {
		if b < 0x21 || b > 0x7e {
			t.Fatalf("session id %q: want visible ASCII only", a1)
		}
	}
	if got := e.gw.sessions.verified(aliceKey(e), a1); got != a1 {
		t.Fatalf("alice's own session id does not verify")
	}
	bobKey := ownerOf(&adapter.Identity{AuthMethod: "jwt", Issuer: e.iss.URL, Tenant: "tenant-1", Subject: "bob"})
	if got := e.gw.sessions.verified(bobKey, a1); got != "" {
		t.Fatalf("alice's session id verified for bob")
	}
	if got := e.gw.sessions.verified(aliceKey(e), a1[:len(a1)-2]+"AA"); got != "" {
		t.Fatalf("a tampered session id verified")
	}
	// The go-sdk client keeps the id and presents it.
	cs := e.mustConnect(t, "legacy", legacyVersion, bearer(bob))
	if e.gw.sessions.verified(bobKey, cs.ID()) == "" {
		t.Fatalf("the go-sdk client's session %q is not one minted for bob", cs.ID())
	}

	resp, _, err := e.send(t.Context(), t, alice, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+legacyVersion+
		`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, map[string]string{"Mcp-Protocol-Version": "1999-01-01"})
	if err != nil || resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Mcp-Session-Id") != "" {
		t.Fatalf("refused initialize: %v %v", err, resp)
	}
	a := e.rpc(t, alice, "server/discover", nil, false, http.Header{"Mcp-Session-Id": {a1}})
	if a.status != http.StatusOK {
		t.Fatalf("server/discover: %d", a.status)
	}
	resp, _, _ = e.send(t.Context(), t, alice, `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"})
	if resp.Header.Get("Mcp-Session-Id") != "" {
		t.Fatalf("a 2026-07-28 request got a session id")
	}
}

// TestSessionKeysFromTheSecret: gateways reading the same secret verify
// each other's session ids; after a rotation the previous version still
// verifies and the new one mints; a key of another secret (or a gateway
// without one: a random key) verifies none; MCPFN_SESSION_KEY_SECRET names
// the secret.
func TestSessionKeysFromTheSecret(t *testing.T) {
	sm, err := secretsstandin.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sm.Close() })
	api := secretsmanager.NewFromConfig(aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(sm.URL),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", "")})
	read := func(name string) sessionKeys {
		t.Helper()
		ks, err := readSessionKeys(t.Context(), api, secretsstandin.ARN(name))
		if err != nil {
			t.Fatal(err)
		}
		return ks
	}
	sm.Generate("session-key", 64)
	sm.Generate("other-key", 64)
	one, two := read("session-key"), read("session-key")
	id := one.mint("owner-1")
	if two.verified("owner-1", id) != id {
		t.Fatal("a gateway with the same secret does not verify the session id")
	}
	sm.Generate("session-key", 64) // a rotation
	three := read("session-key")
	if three.verified("owner-1", id) != id || one.verified("owner-1", three.mint("owner-1")) != "" {
		t.Fatal("after a rotation: the previous version must verify, the new one mint")
	}
	if read("other-key").verified("owner-1", id) != "" || randomSessionKeys().verified("owner-1", id) != "" {
		t.Fatal("another key verified the session id")
	}
	sm.Put("short-key", "too short")
	if _, err := readSessionKeys(t.Context(), api, secretsstandin.ARN("short-key")); err == nil {
		t.Fatal("a secret too short to be a key was accepted")
	}
	t.Setenv("AWS_REGION", "us-east-1")
	cfg, err := ConfigFrom(func(k string) string {
		return map[string]string{EnvAuthMode: "none", EnvSessionKeySecret: " arn:s "}[k]
	})
	if err != nil || cfg.SessionKeySecret != "arn:s" {
		t.Fatalf("%s: %q %v", EnvSessionKeySecret, cfg.SessionKeySecret, err)
	}
}

// TestLegacyCancelStopsOnlyItsSessionsCall: two 2025-11-25 clients of one
// caller, each with its session, run calls with the same JSON-RPC id. A
// cancel from another caller, from the caller without a session id, or for
// another id marks neither; the cancel from the first session stops its
// call only, and the other runs to completion.
func TestLegacyCancelStopsOnlyItsSessionsCall(t *testing.T) {
	h := newHolds()
	e := newEnv(t, withTasks(t, newJobs()), withHeld(h))
	alice, bob := e.alice(t), e.iss.token(t, "bob", nil)
	s1, s2 := e.initialize(t, alice), e.initialize(t, alice)
	t0 := time.Now().Add(-time.Second)
	legacy := func(session string) map[string]string {
		return map[string]string{"Mcp-Protocol-Version": legacyVersion, "Mcp-Session-Id": session}
	}
	a := e.answer(t.Context(), t, alice, legacyCall("a"), legacy(s1))
	receive(t, h.started)
	b := e.answer(t.Context(), t, alice, legacyCall("b"), legacy(s2))
	receive(t, h.started)

	notify := func(token, body string, headers map[string]string) {
		t.Helper()
		resp, got, err := e.send(t.Context(), t, token, body, headers)
		if err != nil || resp.StatusCode != http.StatusAccepted {
			t.Fatalf("notifications/cancelled: %v %s", err, got)
		}
	}
	notify(bob, cancelled("7"), legacy(s1))   // another caller presenting alice's session
	notify(alice, cancelled("7"), legacy("")) // no session
	notify(alice, cancelled("8"), legacy(s2)) // another request
	notify(alice, cancelled(`"7"`), legacy(s2))
	notify(alice, cancelled("7"), legacy(s1)) // a's own
	if got := receive(t, h.stopped); got != "a" {
		t.Fatalf("the cancel stopped %q", got)
	}
	if e.marked(t, aliceKey(e), "session "+s2+" 7", t0) {
		t.Fatal("a cancel marked the other session's call")
	}
	if res := receive(t, a); res == nil || toolErrorOf(t, res).Error != string(adapter.CodeCancelled) {
		t.Fatalf("the cancelled call answered %+v", res)
	}
	h.release("b")
	if f := factsFrom(t, receive(t, b)); f.EntityID != "b" {
		t.Fatalf("the other call answered %+v", f)
	}
}

// TestModernDisconnectStopsOnlyThatCall: two 2026-07-28 calls of one
// caller with the same JSON-RPC id; the client of one closes its stream,
// which stops that call's handler (through the marker keyed by its call
// id), and the function's answer ends the call, so the gateway writes no
// row of its own. A notifications/cancelled of that era changes nothing;
// the other call runs to completion.
func TestModernDisconnectStopsOnlyThatCall(t *testing.T) {
	aud, _, _ := auditTable(t)
	rec := &countingRecorder{Recorder: aud}
	h := newHolds()
	e := newEnv(t, withTasks(t, newJobs(), func(c *Config) { c.Recorder = rec }), withHeld(h))
	alice := e.alice(t)
	t0 := time.Now().Add(-time.Second)
	ctxA, hangUp := context.WithCancel(t.Context())
	bodyA, hdr := modernCall("a")
	a := e.answer(ctxA, t, alice, bodyA, hdr)
	receive(t, h.started)
	bodyB, _ := modernCall("b")
	b := e.answer(t.Context(), t, alice, bodyB, hdr)
	receive(t, h.started)

	resp, got, err := e.send(t.Context(), t, alice, cancelled("7"),
		map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "notifications/cancelled"})
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("2026-07-28 notifications/cancelled: %v %s", err, got)
	}
	if e.marked(t, aliceKey(e), "7", t0) {
		t.Fatal("a 2026-07-28 notifications/cancelled wrote a marker")
	}

	hangUp()
	if got := receive(t, h.stopped); got != "a" {
		t.Fatalf("the disconnect stopped %q", got)
	}
	// By its marker: the test's Lambda stand-in also ends a handler whose
	// Invoke was abandoned, which Lambda does not.
	if !e.marked(t, aliceKey(e), callKey(h.callID("a")), t0) {
		t.Fatal("the disconnect wrote no marker for its call")
	}
	if res := receive(t, a); res != nil {
		t.Fatalf("the hung-up call was answered: %+v", res)
	}
	h.release("b")
	f := factsFrom(t, receive(t, b))
	if f.EntityID != "b" || e.marked(t, aliceKey(e), callKey(f.CallID), t0) {
		t.Fatalf("the other call answered %+v", f)
	}
	e.srv.Close() // waits for the hung-up call's forward to end
	if n := rec.count(); n != 0 {
		t.Fatalf("the gateway wrote %d rows: the function answered both calls", n)
	}
}

// TestRefusedCancelsAndTaskRequestsChangeNothing: a notifications/cancelled,
// tasks/cancel or tasks/get that fails the go-sdk's protocol version or
// header checks is refused before anything acts on it: no marker, the task
// not cancelled, an overdue task not abandoned.
func TestRefusedCancelsAndTaskRequestsChangeNothing(t *testing.T) {
	h := newHolds()
	j := newJobs()
	e := newEnv(t, withTasks(t, j), withHeld(h))
	alice := e.alice(t)
	s1 := e.initialize(t, alice)
	t0 := time.Now().Add(-time.Second)
	call := e.answer(t.Context(), t, alice, legacyCall("r"), map[string]string{"Mcp-Protocol-Version": legacyVersion, "Mcp-Session-Id": s1})
	receive(t, h.started)
	for name, headers := range map[string]map[string]string{
		"unsupported version":           {"Mcp-Protocol-Version": "1999-01-01", "Mcp-Session-Id": s1},
		"2026-07-28 without Mcp-Method": {"Mcp-Protocol-Version": "2026-07-28", "Mcp-Session-Id": s1},
	} {
		resp, got, err := e.send(t.Context(), t, alice, cancelled("7"), headers)
		if err != nil || resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %v %d %s, want 400", name, err, resp.StatusCode, got)
		}
	}
	if e.marked(t, aliceKey(e), "session "+s1+" 7", t0) {
		t.Fatal("a refused notifications/cancelled wrote a marker")
	}
	h.release("r")
	if f := factsFrom(t, receive(t, call)); f.EntityID != "r" {
		t.Fatalf("the call answered %+v", f)
	}

	v := e.createTask(t, alice, optionalTool, jobIn{EntityID: "t-1", Block: true})
	if got := receive(t, j.started); got != "t-1" {
		t.Fatalf("started %q", got)
	}
	for name, hdr := range map[string]map[string]string{
		"unsupported version":              {"Mcp-Protocol-Version": "1999-01-01"},
		"header and _meta versions differ": {"Mcp-Protocol-Version": legacyVersion},
		"no Mcp-Method":                    {"Mcp-Method": ""},
	} {
		for _, m := range []string{"tasks/cancel", "tasks/get"} {
			if status, got := e.taskRequest(t, alice, m, v.TaskID, hdr); status != http.StatusBadRequest {
				t.Errorf("%s, %s: %d %s, want 400", m, name, status, got)
			}
		}
	}
	if g := e.getTask(t, alice, v.TaskID); g.Status != "working" {
		t.Fatalf("after refused cancels the task is %s", g.Status)
	}

	// tasks/get writes too: it ends an overdue task. Refused, it does not.
	e.gw.now = func() time.Time { return time.Now().Add(e.gw.cfg.TaskRunWindow + maxFunctionRun + time.Minute) }
	if status, got := e.taskRequest(t, alice, "tasks/get", v.TaskID, map[string]string{"Mcp-Protocol-Version": "1999-01-01"}); status != http.StatusBadRequest {
		t.Fatalf("tasks/get, unsupported version: %d %s", status, got)
	}
	if got, err := e.cfgUsed.Tasks.Get(t.Context(), aliceKey(e), v.TaskID); err != nil || got.Status != "working" {
		t.Fatalf("a refused tasks/get changed the task: %+v %v", got, err)
	}
	e.gw.now = time.Now
	a := e.rpc(t, alice, "tasks/cancel", map[string]any{"taskId": v.TaskID}, true, nil)
	if a.Error != nil {
		t.Fatalf("tasks/cancel: %+v", a.Error)
	}
	if got := receive(t, j.cancelled); got != "t-1" {
		t.Fatalf("cancelled %q", got)
	}
}

// TestCancelMarkerKeys: the marker a synchronous call's envelope names. A
// 2026-07-28 call's is keyed by its call id, for every caller (an
// Mcp-Session-Id header is ignored); a legacy call's by its verified
// session and JSON-RPC id, else by the verified caller and the id, and an
// unverified caller without a session gets none.
func TestCancelMarkerKeys(t *testing.T) {
	for _, auth := range []AuthMode{AuthJWT, AuthNone} {
		e := newEnv(t, withTasks(t, newJobs()), func(c *Config) { c.Auth = auth })
		envelopes := make(chan wire.Envelope, 1)
		e.api.setMisbehave("fn-"+optionalTool, func(w http.ResponseWriter, r *http.Request) {
			var env wire.Envelope
			_ = json.NewDecoder(r.Body).Decode(&env)
			envelopes <- env
			_, _ = w.Write([]byte(`{"mcpfn":"1","result":{"content":[]}}`))
		})
		owner := ""
		if auth == AuthJWT {
			owner = aliceKey(e)
		}
		alice := e.alice(t)
		session := e.initialize(t, alice)
		legacy := func(sid string) {
			t.Helper()
			body := `{"jsonrpc":"2.0","id":"q-1","method":"tools/call","params":{"name":"` + optionalTool + `","arguments":{"entityId":"m"}}}`
			if resp, b, err := e.send(t.Context(), t, alice, body, map[string]string{"Mcp-Protocol-Version": legacyVersion, "Mcp-Session-Id": sid}); err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("legacy call: %v %s", err, b)
			}
		}

		e.rpc(t, alice, "tools/call", map[string]any{"name": optionalTool, "arguments": jobIn{EntityID: "m"}}, false, http.Header{"Mcp-Session-Id": {session}})
		env := <-envelopes
		if env.Cancel == nil || *env.Cancel != (wire.CancelMarker{Owner: owner, Request: "call " + env.CallID}) {
			t.Errorf("%s, 2026-07-28: cancel %+v, call %s", auth, env.Cancel, env.CallID)
		}
		legacy(session)
		env = <-envelopes
		if env.Cancel == nil || *env.Cancel != (wire.CancelMarker{Owner: owner, Request: `session ` + session + ` "q-1"`}) {
			t.Errorf("%s, legacy with its session: cancel %+v", auth, env.Cancel)
		}
		for _, sid := range []string{"", "made-up", e.gw.sessions.mint("someone else")} {
			legacy(sid)
			env = <-envelopes
			switch {
			case auth == AuthJWT && (env.Cancel == nil || *env.Cancel != (wire.CancelMarker{Owner: owner, Request: `"q-1"`})):
				t.Errorf("verified caller, session %q: cancel %+v", sid, env.Cancel)
			case auth == AuthNone && env.Cancel != nil:
				t.Errorf("unverified caller, session %q: cancel %+v", sid, env.Cancel)
			}
			if env.SessionID != sid {
				t.Errorf("the envelope's session id %q, want the header %q as caller data", env.SessionID, sid)
			}
		}
	}
}
