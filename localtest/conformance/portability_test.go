package conformance_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/mcpfn/mcpfn/catalog"
	"github.com/mcpfn/mcpfn/gateway"
	"github.com/mcpfn/mcpfn/internal/lambdatest"
	"github.com/mcpfn/mcpfn/localtest/conformance"
	"github.com/mcpfn/mcpfn/taskstore"
)

// TestInspectorStrictFindsEverySchemaPortable runs the MCP Inspector's
// schema portability check (--strict) over the real tools/list — the demo's
// tools and the conformance fixtures, listed by the real gateway — and fails
// on any finding, warnings included: a warning is a tool some model provider
// rejects (decision 0028). tools/list needs no function behind the gateway,
// so the gateway runs in-process without the local stack.
func TestInspectorStrictFindsEverySchemaPortable(t *testing.T) {
	node, main := requireNode(t, inspectorMain)
	// The project's tools as its gateway lists them: this repository's
	// catalog (the demo's), built from the functions' own declarations.
	cat, err := catalog.Load("../../" + catalog.FileName)
	if err != nil {
		t.Fatal(err)
	}
	project, err := cat.Declared()
	if err != nil {
		t.Fatal(err)
	}
	tools := append(project, conformance.Catalog()...)
	fns := map[string]string{}
	for _, tl := range tools {
		fns[tl.Name()] = "fn-" + tl.Name()
	}
	gw, err := gateway.New(gateway.Config{
		Tools:     tools,
		Functions: fns,
		Auth:      gateway.AuthNone,
		ToolsList: gateway.ToolsShow, // tools with scopes too: no caller here holds any
		Signer:    lambdatest.Signer(fns),
		Lambda:    noInvoker{},
		Tasks:     taskstore.New(nil, "tasks", taskstore.Options{}), // never reached: nothing runs as a task
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	t.Cleanup(func() {
		srv.Close()
		gw.Close()
	})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	for _, era := range []string{"legacy", "modern"} {
		// --strict prints every finding on stderr and exits 6 only on
		// errors; with --format json the same findings are the envelope's
		// schemaFindings, absent when there are none.
		stdout, stderr, err := runNode(t, ctx, node, main, "--cli", srv.URL+"/mcp", "--transport", "http",
			"--protocol-era", era, "--method", "tools/list", "--strict", "--format", "json")
		if err != nil {
			t.Fatalf("inspector --strict (%s era): %v\nstdout: %s\nstderr: %s", era, err, stdout, stderr)
		}
		var v struct {
			Result struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
			} `json:"result"`
			SchemaFindings []struct {
				ToolName string `json:"toolName"`
				Findings []struct {
					Rule     string `json:"rule"`
					Severity string `json:"severity"`
					Schema   string `json:"schema"`
					Path     string `json:"path"`
				} `json:"findings"`
			} `json:"schemaFindings"`
		}
		if err := json.Unmarshal([]byte(strings.TrimSpace(stdout)), &v); err != nil {
			t.Fatalf("inspector --strict (%s era): output is not one JSON object: %v\n%s", era, err, stdout)
		}
		// The check ran over the whole catalog, not an empty or filtered list.
		if len(v.Result.Tools) != len(tools) {
			t.Errorf("tools/list (%s era) has %d tools, want %d", era, len(v.Result.Tools), len(tools))
		}
		for _, tl := range v.SchemaFindings {
			for _, f := range tl.Findings {
				t.Errorf("%s era: tool %s: %s %s at %s.%s", era, tl.ToolName, f.Severity, f.Rule, f.Schema, f.Path)
			}
		}
		if len(v.SchemaFindings) > 0 {
			t.Fatalf("the Inspector's report (%s era):\n%s", era, stderr)
		}
	}
}

// noInvoker is the gateway's Lambda client where no call is forwarded.
type noInvoker struct{}

func (noInvoker) Invoke(context.Context, *lambda.InvokeInput, ...func(*lambda.Options)) (*lambda.InvokeOutput, error) {
	return nil, errors.New("no invoke expected: the test only lists tools")
}
