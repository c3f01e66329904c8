package templatetest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/catalog"
	"github.com/mcpfn/mcpfn/internal/lambdatest"
	"github.com/mcpfn/mcpfn/wire"
)

// eventsDir holds the project's `sam local invoke -e` events: one mcpfn
// envelope per tool (events/<tool>.json, written by `mcpfn template` for a
// tool without one) and AgentCore Gateway payloads
// (events/agentcore-<tool>.json with its .client-context.json).
const eventsDir = "events"

// TestLocalEventsReachTheHandler runs every catalog tool's event through an
// adapter built from the tool's declaration, as `sam local invoke -e`
// would. As committed, an event carries no call token, and every function
// refuses it (UNAUTHORIZED): there is no unsigned mode a deployed function
// could fall into. Signed as the gateway signs (`mcpfn sign-events` does
// this with a running stack's keys), it passes decoding, verification,
// validation and the scope gate. A tool built from its declaration has no
// handler, so reaching the handler shows as INTERNAL_SERVER_ERROR; anything
// else means the event file has rotted.
func TestLocalEventsReachTheHandler(t *testing.T) {
	dir := filepath.Join(repoRoot(t), eventsDir)
	cat := repoCatalog(t)
	for _, e := range cat.Tools {
		t.Run(e.Tool.Name, func(t *testing.T) {
			payload, err := os.ReadFile(filepath.Join(dir, e.Tool.Name+".json"))
			if err != nil {
				t.Fatalf("no sam local event %s/%s.json for tool %s: `mcpfn template` writes one", eventsDir, e.Tool.Name, e.Tool.Name)
			}
			checkEventReachesTheHandler(t, declaredTool(t, e), payload, allScopes(cat))
		})
	}

	agentcore, err := filepath.Glob(filepath.Join(dir, "agentcore-*.client-context.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(agentcore) == 0 {
		t.Errorf("no %s/agentcore-<tool>.json event: the AgentCore Gateway format is not exercised", eventsDir)
	}
	for _, ccPath := range agentcore {
		tool := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(ccPath), "agentcore-"), ".client-context.json")
		t.Run("agentcore "+tool, func(t *testing.T) {
			e, ok := cat.Entry(tool)
			if !ok {
				t.Fatalf("%s names tool %s, which the catalog does not declare", ccPath, tool)
			}
			payload, err := os.ReadFile(filepath.Join(dir, "agentcore-"+tool+".json"))
			if err != nil {
				t.Fatal(err)
			}
			ccJSON, err := os.ReadFile(ccPath)
			if err != nil {
				t.Fatal(err)
			}
			var cc lambdacontext.ClientContext
			if err := json.Unmarshal(ccJSON, &cc); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := lambdatest.Context(context.Background(), lambdatest.Invocation{RequestID: "local", Client: &cc})
			defer cancel()
			out, err := adapter.New(declaredTool(t, e)).Invoke(ctx, payload)
			if err != nil {
				t.Fatal(err)
			}
			wantReachedHandler(t, out)
		})
	}
}

// checkEventReachesTheHandler: the envelope payload, as written, is
// refused; signed for a caller with scopes, it reaches tool's handler.
func checkEventReachesTheHandler(t *testing.T, tool *adapter.Tool, payload []byte, scopes []string) {
	t.Helper()
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
	demo := &adapter.Identity{Subject: "demo-user", AuthMethod: "jwt", Scopes: scopes}
	env.CallToken = lambdatest.Token(fnName, tool.Name(), env.CallID, demo, env.Params.Arguments)
	signed, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	wantReachedHandler(t, invokeEnvelope(t, fn, signed))
}

// declaredTool is the catalog entry's tool, built from its declaration.
func declaredTool(t *testing.T, e catalog.Entry) *adapter.Tool {
	t.Helper()
	tool, err := adapter.ToolFromDeclaration(e.Tool)
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

// allScopes is every scope a catalog tool requires: the demo caller holds
// them all.
func allScopes(cat *catalog.File) []string {
	var out []string
	for _, e := range cat.Tools {
		for _, s := range e.Tool.Scopes {
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
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
