package catalog

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/mcpfn/mcpfn/adapter"
)

// TestToolsFromEnvAreTheCatalogsDeclaredTools: the gateway's and the
// interceptor's load gives the tools FromEnv + Declared gives, in catalog
// order, listing exactly as they do.
func TestToolsFromEnvAreTheCatalogsDeclaredTools(t *testing.T) {
	t.Setenv(EnvPath, filepath.Join("..", FileName))
	f, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	want, err := f.Declared()
	if err != nil {
		t.Fatal(err)
	}
	got, err := ToolsFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	name := func(tools []*adapter.Tool) []string {
		var out []string
		for _, tl := range tools {
			out = append(out, tl.Name())
		}
		return out
	}
	if g, w := name(got), name(want); !slices.Equal(g, w) || len(g) == 0 {
		t.Errorf("ToolsFromEnv = %v, want %v", g, w)
	}
	for i := range got {
		if string(mustJSON(t, got[i].Declaration())) != string(mustJSON(t, want[i].Declaration())) {
			t.Errorf("tool %s: declarations differ", got[i].Name())
		}
		if g, w := mustJSON(t, listing(t, got[i])), mustJSON(t, listing(t, want[i])); string(g) != string(w) {
			t.Errorf("tool %s lists as\n%s\nwant\n%s", got[i].Name(), g, w)
		}
	}

	t.Setenv(EnvPath, filepath.Join(t.TempDir(), FileName))
	if _, err := ToolsFromEnv(); err == nil {
		t.Error("ToolsFromEnv with no catalog file: no error")
	}
}

// TestToolsFromEnvChecksAllButTheSchemasInsides: the gateway's load checks
// the file and every declaration as Load does, but decodes no schema (the
// functions validate with theirs; `mcpfn template` and `mcpfn build` load
// the catalog in full): a schema whose reference does not resolve, which
// Load refuses, is the gateway's to list as written.
func TestToolsFromEnvChecksAllButTheSchemasInsides(t *testing.T) {
	write := func(body string) {
		t.Helper()
		path := filepath.Join(t.TempDir(), FileName)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Setenv(EnvPath, path)
	}
	tool := func(name, schema string) string {
		return `{"function":"F","package":"./f","tool":{"name":"` + name + `","taskSupport":"forbidden","timeoutSeconds":0,"memoryMB":0,"inputSchema":` + schema + `}}`
	}
	unresolved := `{"type":"object","properties":{"x":{"$ref":"#/$defs/missing"}}}`
	write(`{"mcpfnCatalog":"1","tools":[` + tool("a", unresolved) + `]}`)
	if _, err := FromEnv(); err == nil {
		t.Fatal("Load accepted an unresolvable schema")
	}
	tools, err := ToolsFromEnv()
	if err != nil || len(tools) != 1 {
		t.Fatalf("ToolsFromEnv: %v", err)
	}
	for name, body := range map[string]string{
		"version":       `{"mcpfnCatalog":"0","tools":[` + tool("a", `{"type":"object"}`) + `]}`,
		"twice":         `{"mcpfnCatalog":"1","tools":[` + tool("a", `{"type":"object"}`) + `,` + tool("a", `{"type":"object"}`) + `]}`,
		"unknown field": `{"mcpfnCatalog":"1","tools":[],"extra":1}`,
		"unknown entry": `{"mcpfnCatalog":"1","tools":[{"function":"F","package":"./f","tool":{},"x":1}]}`,
		"bad tool":      `{"mcpfnCatalog":"1","tools":[` + tool("a b", `{"type":"object"}`) + `]}`,
		"input type":    `{"mcpfnCatalog":"1","tools":[` + tool("a", `{"type":"string"}`) + `]}`,
		"malformed":     `{"mcpfnCatalog":"1","tools":[`,
	} {
		write(body)
		if _, err := ToolsFromEnv(); err == nil {
			t.Errorf("%s: ToolsFromEnv accepted %s", name, body)
		}
	}
}

// TestForwardedFileHasFilesFields: the gateway's view of the file decodes
// every field File does (both refuse unknown ones), so the two cannot drift.
func TestForwardedFileHasFilesFields(t *testing.T) {
	names := func(rt reflect.Type) []string {
		var out []string
		for i := range rt.NumField() {
			out = append(out, rt.Field(i).Tag.Get("json"))
		}
		return out
	}
	file, fwd := reflect.TypeFor[File](), reflect.TypeFor[forwardedFile]()
	if g, w := names(fwd), names(file); !slices.Equal(g, w) {
		t.Errorf("forwardedFile's fields %v, File's %v", g, w)
	}
	entry, fwdEntry := reflect.TypeFor[Entry](), fwd.Field(1).Type.Elem()
	if g, w := names(fwdEntry), names(entry); !slices.Equal(g, w) {
		t.Errorf("forwardedFile's entries' fields %v, Entry's %v", g, w)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func listing(t *testing.T, tool *adapter.Tool) adapter.Listing {
	t.Helper()
	l, err := tool.Listing()
	if err != nil {
		t.Fatal(err)
	}
	return l
}
