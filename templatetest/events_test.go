package templatetest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/handlers"
	"github.com/mcpfn/mcpfn/internal/lambdatest"
	"github.com/mcpfn/mcpfn/wire"
)

// TestLocalEventsReachTheHandler runs every event in localtest/events through
// its tool's adapter, as `sam local invoke -e` would. As committed, an event
// carries no call token, and every function refuses it (UNAUTHORIZED): there
// is no unsigned mode a deployed function could fall into. Signed as the
// gateway signs (`mcpfn-local sign-events` does this with a running stack's
// keys), it passes decoding, verification, validation and the scope gate.
// The catalog's tools are bound to no store, so reaching the handler shows
// as its "no store" error (INTERNAL_SERVER_ERROR); anything else means the
// event file has rotted.
func TestLocalEventsReachTheHandler(t *testing.T) {
	dir := filepath.Join(repoRoot(t), "localtest", "events")
	for _, tool := range handlers.Catalog() {
		t.Run(tool.Name(), func(t *testing.T) {
			payload, err := os.ReadFile(filepath.Join(dir, tool.Name()+".json"))
			if err != nil {
				t.Fatalf("no sam local event for %s: %v", tool.Name(), err)
			}
			var env wire.Envelope
			if err := json.Unmarshal(payload, &env); err != nil || env.Params.Name != tool.Name() {
				t.Fatalf("not an envelope for %s (%v)", tool.Name(), err)
			}
			fnName := "fn-" + tool.Name()
			fn := adapter.New(tool, adapter.WithCallVerifier(lambdatest.Verifier(fnName)))
			if code := errorCodeOf(t, invokeEnvelope(t, fn, payload)); code != adapter.CodeUnauthorized {
				t.Fatalf("the unsigned event was answered with %q, want UNAUTHORIZED", code)
			}
			if code := errorCodeOf(t, invokeEnvelope(t, adapter.New(tool), payload)); code != adapter.CodeUnauthorized {
				t.Fatalf("a function without keys answered the unsigned event with %q", code)
			}
			demo := &adapter.Identity{Subject: "demo-user", AuthMethod: "jwt", Scopes: []string{"broadcasts:write"}}
			env.CallToken = lambdatest.Token(fnName, tool.Name(), env.CallID, demo, env.Params.Arguments)
			signed, err := json.Marshal(env)
			if err != nil {
				t.Fatal(err)
			}
			wantReachedHandler(t, invokeEnvelope(t, fn, signed))
		})
	}

	t.Run("agentcore", func(t *testing.T) {
		payload, err := os.ReadFile(filepath.Join(dir, "agentcore-broadcast_list.json"))
		if err != nil {
			t.Fatal(err)
		}
		ccJSON, err := os.ReadFile(filepath.Join(dir, "agentcore-broadcast_list.client-context.json"))
		if err != nil {
			t.Fatal(err)
		}
		var cc lambdacontext.ClientContext
		if err := json.Unmarshal(ccJSON, &cc); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := lambdatest.Context(context.Background(), lambdatest.Invocation{RequestID: "local", Client: &cc})
		defer cancel()
		out, err := adapter.New(handlers.BroadcastList(nil)).Invoke(ctx, payload)
		if err != nil {
			t.Fatal(err)
		}
		wantReachedHandler(t, out)
	})
}

func invokeEnvelope(t *testing.T, fn *adapter.Function, payload []byte) json.RawMessage {
	t.Helper()
	out, err := fn.Invoke(context.Background(), payload)
	if err != nil {
		t.Fatal(err)
	}
	var resp wire.EnvelopeResponse
	if err := json.Unmarshal(out, &resp); err != nil || resp.Error != nil {
		t.Fatalf("response %s (%v)", out, err)
	}
	return resp.Result
}

func errorCodeOf(t *testing.T, result json.RawMessage) adapter.Code {
	t.Helper()
	var tr struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(result, &tr); err != nil || len(tr.Content) != 1 {
		t.Fatalf("result %s (%v)", result, err)
	}
	var body struct {
		Error adapter.Code `json:"error"`
	}
	_ = json.Unmarshal([]byte(tr.Content[0].Text), &body)
	return body.Error
}

func wantReachedHandler(t *testing.T, result json.RawMessage) {
	t.Helper()
	var tr struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(result, &tr); err != nil || len(tr.Content) != 1 {
		t.Fatalf("result %s (%v)", result, err)
	}
	var body struct {
		Error adapter.Code `json:"error"`
	}
	_ = json.Unmarshal([]byte(tr.Content[0].Text), &body)
	if !tr.IsError || body.Error != adapter.CodeInternal {
		t.Fatalf("event did not reach the handler: %s", result)
	}
}
