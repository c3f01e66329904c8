package gateway

import (
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Every tools/call result names its call in _meta: an answer the function
// gave (its id is the one the function saw), an error the gateway made of
// a failed invoke, and a refusal before any invoke. A client finds each
// call's audit row by that id.
func TestEveryResultCarriesItsCallID(t *testing.T) {
	e := newEnv(t)
	cs := e.mustConnect(t, "c", "", bearer(e.iss.token(t, "alice", nil)))

	res := callTool(t, cs, "echo_call", map[string]any{"entityId": "m-1"})
	if f := factsFrom(t, res); res.Meta[MetaCallID] != f.CallID || len(f.CallID) != 32 {
		t.Errorf("answered: _meta %v, the function saw call %q", res.Meta, f.CallID)
	}

	e.api.setMisbehave("fn-flaky", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Amz-Function-Error", "Unhandled")
		_, _ = w.Write([]byte(`{"errorType":"Runtime.ExitError","errorMessage":"killed"}`))
	})
	defer e.api.setMisbehave("fn-flaky", nil)
	res = callTool(t, cs, "flaky_get", map[string]any{"entityId": "m-2"})
	if te := toolErrorOf(t, res); res.Meta[MetaCallID] != te.callID() || te.callID() == "" {
		t.Errorf("failed invoke: _meta %v, error details %v", res.Meta, te.Details)
	}

	res = callTool(t, cs, "thing_delete", map[string]any{"entityId": "m-3"}) // alice lacks things:write
	if te := toolErrorOf(t, res); te.Error != "FORBIDDEN" || res.Meta[MetaCallID] != te.callID() || te.callID() == "" {
		t.Errorf("refused: %+v, _meta %v", te, res.Meta)
	}
}

func TestWithCallIDKeepsTheFunctionsMeta(t *testing.T) {
	res := withCallID(&mcp.CallToolResult{Meta: mcp.Meta{"app/x": 1.0, MetaCallID: "forged"}}, "c-1")
	if res.Meta["app/x"] != 1.0 || res.Meta[MetaCallID] != "c-1" {
		t.Errorf("_meta %v", res.Meta)
	}
	if withCallID(nil, "c-1") != nil {
		t.Error("a JSON-RPC error got a result")
	}
}
