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
// AgentCore's tool schema is a subset of JSON Schema (type, description,
// properties, required, items). The converter keeps that subset; the
// constraints it drops (lengths, patterns, bounds) are still enforced by the
// function itself, which validates against the full schema.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/mcpfn/mcpfn/handlers"
)

// toolDefinition is AgentCore Gateway's ToolDefinition.
type toolDefinition struct {
	Name         string            `json:"name"`
	Description  string            `json:"description"`
	InputSchema  *schemaDefinition `json:"inputSchema"`
	OutputSchema *schemaDefinition `json:"outputSchema,omitempty"`
}

// schemaDefinition is AgentCore Gateway's SchemaDefinition.
type schemaDefinition struct {
	Type        string                       `json:"type"`
	Description string                       `json:"description,omitempty"`
	Properties  map[string]*schemaDefinition `json:"properties,omitempty"`
	Required    []string                     `json:"required,omitempty"`
	Items       *schemaDefinition            `json:"items,omitempty"`
}

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
	var all []toolDefinition
	for _, t := range handlers.Catalog() {
		mt := t.MCPTool()
		def := toolDefinition{Name: mt.Name, Description: mt.Description}
		var err error
		if def.InputSchema, err = convert(t.InputSchema()); err != nil {
			return fmt.Errorf("%s input: %w", mt.Name, err)
		}
		if def.OutputSchema, err = convert(t.OutputSchema()); err != nil {
			return fmt.Errorf("%s output: %w", mt.Name, err)
		}
		all = append(all, def)
		if err := write(filepath.Join(dir, mt.Name+".json"), []toolDefinition{def}); err != nil {
			return err
		}
	}
	return write(filepath.Join(dir, "tools.json"), all)
}

func write(path string, defs []toolDefinition) error {
	b, err := json.MarshalIndent(defs, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// convert maps a JSON Schema onto AgentCore's subset. A nullable type
// (["null", "array"], as jsonschema-go infers for slices) keeps its non-null
// member: AgentCore has one type per schema.
func convert(s *jsonschema.Schema) (*schemaDefinition, error) {
	if s == nil {
		return nil, nil
	}
	typ := s.Type
	if typ == "" {
		types := slices.DeleteFunc(slices.Clone(s.Types), func(t string) bool { return t == "null" })
		if len(types) != 1 {
			return nil, fmt.Errorf("cannot express types %v in AgentCore's schema", s.Types)
		}
		typ = types[0]
	}
	d := &schemaDefinition{Type: typ, Description: s.Description, Required: slices.Clone(s.Required)}
	for name, p := range s.Properties {
		c, err := convert(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if d.Properties == nil {
			d.Properties = make(map[string]*schemaDefinition)
		}
		d.Properties[name] = c
	}
	if s.Items != nil {
		var err error
		if d.Items, err = convert(s.Items); err != nil {
			return nil, fmt.Errorf("items: %w", err)
		}
	}
	return d, nil
}
