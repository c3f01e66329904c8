package adapter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/mcpfn/mcpfn/adapter"
)

// catalogJSON is a declaration as the catalog file holds it (indented, HTML
// characters unescaped: catalog.File.Marshal).
func catalogJSON(t *testing.T, d adapter.Declaration) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("    ", "  ")
	if err := enc.Encode(d); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestForwardedToolIsItsDeclaration: the tool a gateway builds from a
// catalog entry without decoding its schemas lists exactly as the tool
// rebuilt from the decoded declaration (and as the function's own tool),
// has the same name, scopes, task support, limits and needs, declares the
// same, and, served, validates and answers as it does.
func TestForwardedToolIsItsDeclaration(t *testing.T) {
	def := notesDef
	def.Description = "Adds a <note> & tags it: \"quoted\", ünïcode, \u2028 and all"
	def.TaskAfterInput = true
	// HTML characters in a schema too: json.Marshal escapes them, the
	// catalog file does not.
	def.RefineInput = adapter.Refine{"count": func(p *jsonschema.Schema) { p.Description = "how many <at most> & why" }}
	maps.Copy(def.RefineInput, adapter.Refine{"label": labelDef.RefineInput["label"]})
	def.MaxArgumentBytes = 1 << 20
	tool := adapter.Declare(def, func(struct{}, context.Context, *adapter.Call, labelIn) (labelOut, error) {
		return labelOut{}, nil
	}).Tool()
	raw := catalogJSON(t, tool.Declaration())
	var d adapter.Declaration
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	eager, err := adapter.ToolFromDeclaration(d)
	if err != nil {
		t.Fatal(err)
	}
	fwd, err := adapter.ForwardedTool(raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []*adapter.Tool{tool, eager} {
		w, _ := json.Marshal(listing(t, want))
		g, _ := json.Marshal(listing(t, fwd))
		if !bytes.Equal(g, w) {
			t.Fatalf("the forwarded tool lists as\n%s\nwant\n%s", g, w)
		}
	}
	// The listed bytes themselves, whichever encoder writes them on, and
	// from a catalog whose schemas have HTML characters unescaped (written
	// by hand: jsonschema-go escapes them).
	literal := raw
	for esc, c := range map[string]string{`\u003c`: "<", `\u003e`: ">", `\u0026`: "&"} {
		literal = bytes.ReplaceAll(literal, []byte(esc), []byte(c))
	}
	for _, raw := range [][]byte{raw, literal} {
		fwd, err := adapter.ForwardedTool(raw)
		if err != nil {
			t.Fatal(err)
		}
		l := listing(t, fwd)
		in, out := l.InputSchema, l.OutputSchema
		if w, _ := json.Marshal(eager.InputSchema()); !bytes.Equal(in, w) {
			t.Fatalf("input schema listed as\n%s\nwant\n%s", in, w)
		}
		if w, _ := json.Marshal(eager.OutputSchema()); !bytes.Equal(out, w) {
			t.Fatalf("output schema listed as\n%s\nwant\n%s", out, w)
		}
	}
	if bytes.Equal(literal, raw) {
		t.Fatal("the test's schema has no HTML characters")
	}
	if fwd.Name() != eager.Name() || !reflect.DeepEqual(fwd.Scopes(), eager.Scopes()) || fwd.TaskSupport() != eager.TaskSupport() ||
		fwd.TaskAfterInput() != eager.TaskAfterInput() || fwd.MaxArgumentBytes() != eager.MaxArgumentBytes() ||
		fwd.Destructive() != eager.Destructive() || fwd.Timeout() != eager.Timeout() || fwd.MemoryMB() != eager.MemoryMB() ||
		!reflect.DeepEqual(fwd.Tables(), eager.Tables()) || !reflect.DeepEqual(fwd.Buckets(), eager.Buckets()) {
		t.Fatalf("forwarded tool %+v differs from the declared one", fwd.Declaration())
	}
	w, _ := json.Marshal(eager.Declaration())
	g, _ := json.Marshal(fwd.Declaration())
	if !bytes.Equal(g, w) {
		t.Fatalf("the forwarded tool declares\n%s\nwant\n%s", g, w)
	}
	if s := fwd.InputSchema(); s == nil || s.Properties["label"].MaxLength == nil {
		t.Fatalf("input schema asked for: %+v", s)
	}

	// Served (a test's use: it has no handler), it validates as the
	// declared tool does.
	d.Scopes = nil
	eager, err = adapter.ToolFromDeclaration(d)
	if err != nil {
		t.Fatal(err)
	}
	var noScopes map[string]any
	_ = json.Unmarshal(raw, &noScopes)
	delete(noScopes, "scopes")
	if fwd, err = adapter.ForwardedTool(mustJSON(t, noScopes)); err != nil {
		t.Fatal(err)
	}
	for _, args := range []string{`{"label":"much-too-long"}`, `{"label":"ok"}`} {
		call := `{"name":"note_add","arguments":` + args + `}`
		w, _ := json.Marshal(invokeRPC(t, newFunction(eager, quietLogger()), "tools/call", call))
		g, _ := json.Marshal(invokeRPC(t, newFunction(fwd, quietLogger()), "tools/call", call))
		if !bytes.Equal(g, w) || (args == `{"label":"ok"}`) != strings.Contains(string(g), "INTERNAL_SERVER_ERROR") {
			t.Fatalf("%s: the forwarded tool answered\n%s\nthe declared one\n%s", args, g, w)
		}
	}
}

// TestForwardedToolDecodesNoSchemaUntilAsked: building a forwarded tool
// decodes and resolves no schema — a schema whose reference does not
// resolve, which ToolFromDeclaration refuses, is listed as written — and
// asking for it as a schema then finds it unusable.
func TestForwardedToolDecodesNoSchemaUntilAsked(t *testing.T) {
	raw := []byte(`{"name":"ref_tool","taskSupport":"forbidden","timeoutSeconds":0,"memoryMB":0,
		"inputSchema": {"type": "object", "properties": {"x": {"$ref": "#/$defs/missing"}}}}`)
	var d adapter.Declaration
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	if _, err := adapter.ToolFromDeclaration(d); err == nil {
		t.Fatal("ToolFromDeclaration resolved a missing reference")
	}
	fwd, err := adapter.ForwardedTool(raw)
	if err != nil {
		t.Fatalf("ForwardedTool decoded a schema: %v", err)
	}
	got, _ := json.Marshal(listing(t, fwd).InputSchema)
	if want := `{"type":"object","properties":{"x":{"$ref":"#/$defs/missing"}}}`; string(got) != want {
		t.Fatalf("listed %s, want %s", got, want)
	}
	if s := fwd.InputSchema(); s != nil {
		t.Fatalf("an unresolvable schema asked for as a schema: %+v", s)
	}
}

// TestForwardedToolRefusesWhatADeclarationRefuses: everything but the
// schemas' insides is checked as ToolFromDeclaration checks it, and the
// schemas must be JSON objects, the input's of type "object" (what the
// go-sdk requires of a listed tool).
func TestForwardedToolRefusesWhatADeclarationRefuses(t *testing.T) {
	base := map[string]any{
		"name": "ok_tool", "taskSupport": "forbidden", "timeoutSeconds": 0, "memoryMB": 0,
		"inputSchema": map[string]any{"type": "object"},
	}
	if _, err := adapter.ForwardedTool(mustJSON(t, base)); err != nil {
		t.Fatalf("the base declaration: %v", err)
	}
	for name, tc := range map[string]struct {
		key string
		val any
	}{
		"bad name":                 {"name", "no spaces allowed"},
		"reserved name":            {"name", "gateway"},
		"task support":             {"taskSupport", "sometimes"},
		"task after input":         {"taskAfterInput", true},
		"argument bytes":           {"maxArgumentBytes", -1},
		"timeout":                  {"timeoutSeconds", 16 * 60},
		"table action":             {"tables", []map[string]any{{"table": "T", "env": "T_TABLE", "actions": []string{"*"}}}},
		"no input schema":          {"inputSchema", nil},
		"input not an object type": {"inputSchema", map[string]any{"type": "string"}},
		"input not an object":      {"inputSchema", []any{}},
		"output not an object":     {"outputSchema", "a string"},
	} {
		d := map[string]any{}
		for k, v := range base {
			d[k] = v
		}
		d[tc.key] = tc.val
		raw := mustJSON(t, d)
		if _, err := adapter.ForwardedTool(raw); err == nil {
			t.Errorf("%s: ForwardedTool accepted %s", name, raw)
		}
		var decl adapter.Declaration
		if json.Unmarshal(raw, &decl) == nil {
			if _, err := adapter.ToolFromDeclaration(decl); err == nil {
				t.Errorf("%s: ToolFromDeclaration accepted %s (the two must agree)", name, raw)
			}
		}
	}
	if _, err := adapter.ForwardedTool([]byte(`{"name":`)); err == nil {
		t.Error("ForwardedTool accepted malformed JSON")
	}
}
