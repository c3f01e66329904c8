package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/mcpfn/mcpfn/calltoken"
	"github.com/mcpfn/mcpfn/wire"
)

// A forwarded multi-round retry's token binds the client's answers and
// state: the function accepts the envelope as the gateway sent it, and
// refuses the same envelope with another answer under the same token.
func TestForwardedRetryTokenBindsTheRound(t *testing.T) {
	e := newEnv(t)
	var (
		mu       sync.Mutex
		captured []byte
	)
	e.api.setMisbehave("fn-echo", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		captured = b
		mu.Unlock()
		var env wire.Envelope
		_ = json.Unmarshal(b, &env)
		_ = json.NewEncoder(w).Encode(map[string]any{"mcpfn": "1", "callId": env.CallID, "result": map[string]any{"content": []any{}}})
	})
	a := e.rpc(t, e.iss.token(t, "alice", nil), "tools/call", map[string]any{
		"name": "echo_call", "arguments": map[string]any{"entityId": "e-1"},
		"inputResponses": map[string]any{"user_name": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}},
		"requestState":   "sealed-state-1",
	}, false, nil)
	if a.Error != nil {
		t.Fatalf("tools/call: %d %s", a.Error.Code, a.Error.Message)
	}
	mu.Lock()
	var env wire.Envelope
	err := json.Unmarshal(captured, &env)
	mu.Unlock()
	if err != nil || len(env.Params.InputResponses) == 0 || env.Params.RequestState != "sealed-state-1" {
		t.Fatalf("forwarded envelope %s (%v): the round did not reach the function", captured, err)
	}
	want := calltoken.Expect{Tool: "echo_call", CallID: env.CallID, Args: env.Params.Arguments, Signer: calltoken.SignerGateway,
		InputResponses: env.Params.InputResponses, RequestState: env.Params.RequestState}
	v := e.verifiers["fn-echo"]
	if _, err := v.Verify(context.Background(), env.CallToken, want); err != nil {
		t.Fatalf("the function refuses the envelope the gateway forwarded: %v", err)
	}
	want.InputResponses = json.RawMessage(`{"user_name":{"action":"accept","content":{"name":"Eve"}}}`)
	if _, err := v.Verify(context.Background(), env.CallToken, want); calltoken.ReasonOf(err) != calltoken.ReasonRound {
		t.Fatalf("another answer under the forwarded token: %v; want %s", err, calltoken.ReasonRound)
	}
}
