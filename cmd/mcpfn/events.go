package main

import (
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/mcpfn/mcpfn/catalog"
	"github.com/mcpfn/mcpfn/internal/project"
	"github.com/mcpfn/mcpfn/wire"
)

// eventsDir holds one example invocation per tool (events/<tool>.json), an
// mcpfn envelope for `sam local invoke -e` and the project's own tests.
// As written it carries no call token, so a function refuses it;
// `mcpfn sign-events` signs them with a running local stack's keys.
const eventsDir = "events"

// writeMissingEvents writes events/<tool>.json for every tool that has
// none, with the smallest arguments its input schema accepts; an existing
// file is the project's own (edited arguments) and never rewritten.
func writeMissingEvents(p *project.Project, cat *catalog.File) ([]string, error) {
	var written []string
	for _, e := range cat.Tools {
		path := filepath.Join(p.Root, eventsDir, e.Tool.Name+".json")
		if _, err := os.Stat(path); err == nil {
			continue
		}
		event := map[string]any{
			"mcpfn":  wire.EnvelopeVersion,
			"callId": "local-" + e.Tool.Name + "-0001",
			"params": map[string]any{"name": e.Tool.Name, "arguments": exampleOf(e.Tool.InputSchema)},
			"mcp": map[string]any{
				"era": wire.EraModern, "method": "tools/call", "protocolVersion": wire.ModernProtocolVersion,
				"clientInfo": map[string]any{"name": "sam-local", "version": "1"}, "jsonrpcId": 1,
			},
		}
		b, err := json.MarshalIndent(event, "", "  ")
		if err != nil {
			return written, err
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return written, err
		}
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			return written, err
		}
		written = append(written, path)
	}
	return written, nil
}

// exampleOf is a value of schema s: its default or first example, else the
// smallest value of its type, with every required property.
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
