package templatetest

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/google/jsonschema-go/jsonschema"

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
// The catalog's tools are declared without a handler, so reaching the
// handler shows as INTERNAL_SERVER_ERROR; anything else means the event file
// has rotted.
func TestLocalEventsReachTheHandler(t *testing.T) {
	dir := filepath.Join(repoRoot(t), "localtest", "events")
	if *writeEvents {
		writeMissingEvents(t, dir, handlers.Catalog())
	}
	for _, tool := range handlers.Catalog() {
		t.Run(tool.Name(), func(t *testing.T) {
			payload, err := os.ReadFile(filepath.Join(dir, tool.Name()+".json"))
			if err != nil {
				t.Fatal(missingEvent(tool.Name()))
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
		out, err := adapter.New(catalogTool(t, handlers.ToolList)).Invoke(ctx, payload)
		if err != nil {
			t.Fatal(err)
		}
		wantReachedHandler(t, out)
	})
}

// catalogTool is the catalog's tool named name.
func catalogTool(t *testing.T, name string) *adapter.Tool {
	t.Helper()
	for _, tool := range handlers.Catalog() {
		if tool.Name() == name {
			return tool
		}
	}
	t.Fatalf("no tool %s in the catalog", name)
	return nil
}

// writeEvents makes TestLocalEventsReachTheHandler write the event of every
// catalog tool that has none (missingEvent gives the command).
var writeEvents = flag.Bool("write-events", false, "write localtest/events/<tool>.json for every catalog tool without one")

// missingEvent says which event a tool lacks and the command that writes it.
func missingEvent(tool string) string {
	return "no sam local event localtest/events/" + tool + ".json for tool " + tool +
		"; write it with: go test ./templatetest/ -run '^TestLocalEventsReachTheHandler$' -write-events"
}

// writeMissingEvents writes an envelope for each tool without an event,
// its arguments derived from the tool's input schema (exampleOf): the
// author edits them into a meaningful call.
func writeMissingEvents(t *testing.T, dir string, tools []*adapter.Tool) {
	t.Helper()
	for _, tool := range tools {
		path := filepath.Join(dir, tool.Name()+".json")
		if _, err := os.Stat(path); err == nil {
			continue
		}
		event := map[string]any{
			"mcpfn":  wire.EnvelopeVersion,
			"callId": "local-" + tool.Name() + "-0001",
			"params": map[string]any{"name": tool.Name(), "arguments": exampleOf(tool.InputSchema())},
			"mcp": map[string]any{
				"era": wire.EraModern, "method": "tools/call", "protocolVersion": wire.ModernProtocolVersion,
				"clientInfo": map[string]any{"name": "sam-local", "version": "1"}, "jsonrpcId": 1,
			},
		}
		b, err := json.MarshalIndent(event, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s: check its arguments", path)
	}
}

// exampleOf is a value of schema s: its default or first example, else
// the smallest value of its type, with every required property.
func exampleOf(s *jsonschema.Schema) any {
	switch {
	case s == nil:
		return nil
	case s.Default != nil:
		return s.Default
	case len(s.Examples) > 0:
		return s.Examples[0]
	}
	switch s.Type {
	case "object":
		obj := map[string]any{}
		for _, name := range s.Required {
			obj[name] = exampleOf(s.Properties[name])
		}
		return obj
	case "array":
		return []any{}
	case "string":
		return "example"
	case "integer", "number":
		if s.Minimum != nil {
			return *s.Minimum
		}
		return 0
	case "boolean":
		return false
	}
	return nil
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

// TestANewToolsEventIsWritten: a tool without an event fails with the
// command that writes one, and that command writes an envelope for it whose
// derived arguments fit the tool's input schema.
func TestANewToolsEventIsWritten(t *testing.T) {
	msg := missingEvent("broadcast_count")
	if !strings.Contains(msg, "localtest/events/broadcast_count.json") || !strings.Contains(msg, "-write-events") {
		t.Fatalf("message %q names neither the file nor the command", msg)
	}
	type countIn struct {
		Channel string `json:"channel"`
		Limit   int    `json:"limit,omitempty"`
	}
	tool := adapter.MustDeclare(adapter.ToolDef[countIn, struct{}]{
		Name:        "broadcast_count",
		RefineInput: adapter.Refine{"channel": func(p *jsonschema.Schema) { p.Default = json.RawMessage(`"general"`) }},
	})
	dir := t.TempDir()
	writeMissingEvents(t, dir, []*adapter.Tool{tool})
	payload, err := os.ReadFile(filepath.Join(dir, "broadcast_count.json"))
	if err != nil {
		t.Fatal(err)
	}
	var env wire.Envelope
	if err := json.Unmarshal(payload, &env); err != nil || env.Params.Name != "broadcast_count" {
		t.Fatalf("written event %s (%v)", payload, err)
	}
	var args bytes.Buffer
	if err := json.Compact(&args, env.Params.Arguments); err != nil || args.String() != `{"channel":"general"}` {
		t.Fatalf("arguments %s, want the required channel from its default", env.Params.Arguments)
	}
	env.CallToken = lambdatest.Token("fn", tool.Name(), env.CallID, nil, env.Params.Arguments)
	signed, _ := json.Marshal(env)
	wantReachedHandler(t, invokeEnvelope(t, adapter.New(tool, adapter.WithCallVerifier(lambdatest.Verifier("fn"))), signed))
}
