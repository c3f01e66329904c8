package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpfn/mcpfn/agentcore"
)

// `mcpfn agentcore-schemas` in this repository (the demo catalog): one file per tool plus tools.json, each tool's
// schema carrying the catalog's properties and required list.
func TestAgentCoreSchemasWritesEveryCatalogTool(t *testing.T) {
	dir := t.TempDir()
	if code := run(t.Context(), []string{"agentcore-schemas", "-o", dir}, nil, io.Discard, os.Stderr); code != 0 {
		t.Fatalf("exit %d", code)
	}
	catalogTools, err := projectTools()
	if err != nil {
		t.Fatal(err)
	}
	read := func(name string) []agentcore.ToolDefinition {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		var defs []agentcore.ToolDefinition
		if err := json.Unmarshal(b, &defs); err != nil {
			t.Fatal(err)
		}
		return defs
	}
	all := read("tools.json")
	if len(all) != len(catalogTools) {
		t.Fatalf("tools.json has %d tools, the catalog %d", len(all), len(catalogTools))
	}
	for i, tool := range catalogTools {
		one := read(tool.Name() + ".json")
		if len(one) != 1 || one[0].Name != tool.Name() || all[i].Name != tool.Name() {
			t.Fatalf("%s: files hold %+v", tool.Name(), one)
		}
		in := tool.InputSchema()
		got := one[0].InputSchema
		if got.Type != "object" || len(got.Properties) != len(in.Properties) || len(got.Required) != len(in.Required) {
			t.Errorf("%s: input schema %+v from %+v", tool.Name(), got, in)
		}
		for name, p := range got.Properties {
			if p.Type == "" || p.Description == "" {
				t.Errorf("%s.%s: type %q description %q", tool.Name(), name, p.Type, p.Description)
			}
		}
		if one[0].OutputSchema == nil || one[0].OutputSchema.Type != "object" {
			t.Errorf("%s: output schema %+v", tool.Name(), one[0].OutputSchema)
		}
	}
}
