package gateway

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func listed(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// tools/list shows each caller the tools it may call; in show mode every
// tool is listed and the call is refused instead.
func TestToolsListPerCaller(t *testing.T) {
	e := newEnv(t)
	writer := e.mustConnect(t, "writer", "", bearer(e.iss.token(t, "wendy", func(c jwt.MapClaims) { c["scope"] = "things:write" })))
	reader := e.mustConnect(t, "reader", "", bearer(e.iss.token(t, "rita", nil)))
	w, r := listed(t, writer), listed(t, reader)
	if len(w) != len(e.cat.tools()) || len(r) != len(e.cat.tools())-1 || strings.Contains(strings.Join(r, ","), "thing_delete") {
		t.Fatalf("writer sees %v, reader sees %v", w, r)
	}

	show := newEnv(t, func(c *Config) { c.ToolsList = ToolsShow })
	reader = show.mustConnect(t, "reader", "", bearer(show.iss.token(t, "rita", nil)))
	if got := listed(t, reader); len(got) != len(show.cat.tools()) {
		t.Fatalf("show mode lists %v", got)
	}
}

// A caller without the tool's scope is refused at the gateway: FORBIDDEN,
// and the function is never invoked. Without identity: UNAUTHORIZED, no
// invoke either.
func TestForbiddenAtTheGatewayWithoutInvoke(t *testing.T) {
	for _, mode := range []ToolsListMode{ToolsHide, ToolsShow} {
		t.Run(string(mode), func(t *testing.T) {
			e := newEnv(t, func(c *Config) { c.ToolsList = mode })
			cs := e.mustConnect(t, "reader", "", bearer(e.iss.token(t, "rita", func(c jwt.MapClaims) { c["scope"] = "things:read" })))
			te := toolErrorOf(t, callTool(t, cs, "thing_delete", map[string]any{"entityId": "t-1"}))
			if te.Error != "FORBIDDEN" || !strings.Contains(fmt.Sprint(te.Details), "things:write") {
				t.Fatalf("got %+v", te)
			}
			if n := e.api.count("fn-secure"); n != 0 {
				t.Fatalf("the function was invoked %d times", n)
			}
		})
	}
	open := newEnv(t, func(c *Config) { c.Auth = AuthNone; c.ToolsList = ToolsShow })
	cs := open.mustConnect(t, "anon", "", nil)
	if te := toolErrorOf(t, callTool(t, cs, "thing_delete", map[string]any{"entityId": "t-1"})); te.Error != "UNAUTHORIZED" {
		t.Fatalf("got %+v", te)
	}
	if n := open.api.count("fn-secure"); n != 0 {
		t.Fatalf("the function was invoked %d times", n)
	}
	// A caller holding the scope gets through to the function.
	e := newEnv(t)
	cs = e.mustConnect(t, "writer", "", bearer(e.iss.token(t, "wendy", func(c jwt.MapClaims) { c["scope"] = "things:write" })))
	if f := factsFrom(t, callTool(t, cs, "thing_delete", map[string]any{"entityId": "t-1"})); f.Subject != "wendy" {
		t.Fatalf("facts %+v", f)
	}
}

// A key rotation: after the secret's new version is current, the gateway
// signs with it once it reloads, the function picks it up on the first
// token naming it, and calls signed with the previous key still verify.
func TestKeyRotationWithoutDowntime(t *testing.T) {
	e := newEnv(t)
	cs := e.mustConnect(t, "writer", "", bearer(e.iss.token(t, "wendy", nil)))
	if f := factsFrom(t, callTool(t, cs, "echo_call", map[string]any{"entityId": "before"})); f.Subject != "wendy" {
		t.Fatalf("before: %+v", f)
	}
	e.secrets.Generate("fn-echo-key", 64) // the rotation
	// Until the gateway reloads it still signs with the previous key.
	if f := factsFrom(t, callTool(t, cs, "echo_call", map[string]any{"entityId": "old-key"})); f.Subject != "wendy" {
		t.Fatalf("previous key during the grace window: %+v", f)
	}
	if err := e.gw.signer.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if f := factsFrom(t, callTool(t, cs, "echo_call", map[string]any{"entityId": "new-key"})); f.Subject != "wendy" {
		t.Fatalf("new key: %+v", f)
	}
}

// A call refused at the gateway leaves exactly one row, written by the
// gateway, naming the verified caller and the refusal; the function never
// ran.
func TestRefusalAtTheGatewayIsAudited(t *testing.T) {
	aud, client, table := auditTable(t)
	e := newEnv(t, func(c *Config) { c.Recorder = aud; c.ToolsList = ToolsShow })
	cs := e.mustConnect(t, "reader", "", bearer(e.iss.token(t, "rita", nil)))
	te := toolErrorOf(t, callTool(t, cs, "thing_delete", map[string]any{"entityId": "t-9"}))
	if te.Error != "FORBIDDEN" || e.api.count("fn-secure") != 0 {
		t.Fatalf("answer %+v, %d invokes", te, e.api.count("fn-secure"))
	}
	rows := rowsOf(t, client, table, te.callID())
	if len(rows) != 1 {
		t.Fatalf("%d rows for the refused call %q", len(rows), te.callID())
	}
	r := rows[0]
	if attr(r, "stage") != StageGateway || attr(r, "errorCode") != "FORBIDDEN" || attr(r, "callerSubject") != "rita" ||
		attr(r, "status") != "done" || !strings.Contains(attr(r, "errorDetails"), "things:write") {
		t.Fatalf("row %v", r)
	}
}
