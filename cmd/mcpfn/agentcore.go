package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/agentcore"
	"github.com/mcpfn/mcpfn/catalog"
	"github.com/mcpfn/mcpfn/internal/project"
)

// projectTools is the project's catalog's tools, for the commands that only
// read it.
func projectTools() ([]*adapter.Tool, error) {
	p, err := project.Find(".")
	if err != nil {
		return nil, err
	}
	cat, err := catalog.Load(p.CatalogPath())
	if err != nil {
		return nil, err
	}
	return cat.Declared()
}

// runAgentCoreSchemas is `mcpfn agentcore-schemas [-o DIR]`: the tools'
// schemas in the form Amazon Bedrock AgentCore Gateway takes for a Lambda
// target — <tool>.json (a one-tool list: each tool is its own target) and
// tools.json (all of them). The template's targets carry the same schemas
// inline; these files are for gateways configured outside it.
func runAgentCoreSchemas(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpfn agentcore-schemas", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("o", filepath.Join("bin", "agentcore"), "directory to write the schema files into")
	if fs.Parse(args) != nil || fs.NArg() != 0 {
		return 2
	}
	tools, err := projectTools()
	if err != nil {
		return fail(stderr, "agentcore-schemas", err)
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return fail(stderr, "agentcore-schemas", err)
	}
	var all []agentcore.ToolDefinition
	for _, t := range tools {
		def, err := agentcore.Definition(t)
		if err != nil {
			return fail(stderr, "agentcore-schemas", err)
		}
		all = append(all, def)
		if err := writeJSON(filepath.Join(*dir, def.Name+".json"), []agentcore.ToolDefinition{def}); err != nil {
			return fail(stderr, "agentcore-schemas", err)
		}
	}
	if err := writeJSON(filepath.Join(*dir, "tools.json"), all); err != nil {
		return fail(stderr, "agentcore-schemas", err)
	}
	fmt.Fprintf(stdout, "wrote %d tool schemas into %s\n", len(all), *dir)
	return 0
}

// runAgentCorePolicies is `mcpfn agentcore-policies [-o FILE]
// [-gateway-arn ARN]`: Cedar policies for an AgentCore Gateway policy
// engine, one permit per tool by JWT scope (agentcore.Policies).
func runAgentCorePolicies(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpfn agentcore-policies", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", filepath.Join("bin", "agentcore", "policies.cedar"), "file to write the policies into")
	arn := fs.String("gateway-arn", "", "the gateway's ARN (default: any AgentCore::Gateway)")
	if fs.Parse(args) != nil || fs.NArg() != 0 {
		return 2
	}
	tools, err := projectTools()
	if err != nil {
		return fail(stderr, "agentcore-policies", err)
	}
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		return fail(stderr, "agentcore-policies", err)
	}
	if err := os.WriteFile(*out, []byte(agentcore.Policies(tools, *arn)), 0o644); err != nil {
		return fail(stderr, "agentcore-policies", err)
	}
	fmt.Fprintf(stdout, "wrote %s\n", *out)
	return 0
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
