// Command schemas writes the broadcast tools' schemas in the form Amazon
// Bedrock AgentCore Gateway takes for a Lambda target, generated from
// handlers.Catalog(): the schemas the functions validate with are the only
// source, never written out by hand a second time.
//
//	go run ./handlers/cmd/schemas -o bin/agentcore
//
// writes <tool>.json (a one-tool list: each tool is its own function, so its
// own gateway target) and tools.json (all of them) into the directory.
//
// The conversion is agentcore.Definition: AgentCore's tool schema is a
// subset of JSON Schema (type, description, properties, required, items);
// the constraints it drops (lengths, patterns, bounds) are still enforced by
// the function itself, which validates against the full schema.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mcpfn/mcpfn/agentcore"
	"github.com/mcpfn/mcpfn/handlers"
)

func main() {
	out := flag.String("o", "bin/agentcore", "directory to write the schema files into")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "schemas:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var all []agentcore.ToolDefinition
	for _, t := range handlers.Catalog() {
		def, err := agentcore.Definition(t)
		if err != nil {
			return err
		}
		all = append(all, def)
		if err := write(filepath.Join(dir, def.Name+".json"), []agentcore.ToolDefinition{def}); err != nil {
			return err
		}
	}
	return write(filepath.Join(dir, "tools.json"), all)
}

func write(path string, defs []agentcore.ToolDefinition) error {
	b, err := json.MarshalIndent(defs, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
