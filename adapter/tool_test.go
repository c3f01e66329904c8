package adapter_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/mcpfn/mcpfn/adapter"
)

type labelIn struct {
	Label string `json:"label" jsonschema:"the label to set"`
	Count int    `json:"count,omitempty"`
}

type labelOut struct {
	Label string `json:"label"`
}

// labelDef is a definition with refined schemas and no handler, as a
// package declares it once for both its catalog and its function.
var labelDef = adapter.ToolDef[labelIn, labelOut]{
	Name: "label_set",
	RefineInput: adapter.Refine{
		"label": func(p *jsonschema.Schema) { p.MaxLength, p.Pattern = jsonschema.Ptr(8), "^[a-z]+$" },
		"count": func(p *jsonschema.Schema) { p.Default = json.RawMessage("1") },
	},
	RefineOutput: adapter.Refine{
		"label": func(p *jsonschema.Schema) { p.MinLength = jsonschema.Ptr(1) },
	},
}

func labelHandler(_ context.Context, _ *adapter.Call, in labelIn) (labelOut, error) {
	return labelOut{Label: in.Label}, nil
}

// TestRefineTightensTheInferredSchema: the refinements land in the schema
// tools/list advertises, and the function enforces them before the handler.
func TestRefineTightensTheInferredSchema(t *testing.T) {
	d := labelDef
	d.Handler = labelHandler
	tool := adapter.MustDefine(d)
	in := tool.InputSchema()
	if p := in.Properties["label"]; p.MaxLength == nil || *p.MaxLength != 8 || p.Pattern != "^[a-z]+$" || p.Description != "the label to set" {
		t.Fatalf("refined label schema %+v: want the tag's description kept and the limits added", p)
	}
	if p := in.Properties["count"]; string(p.Default) != "1" {
		t.Fatalf("count default %s", p.Default)
	}
	if p := tool.OutputSchema().Properties["label"]; p.MinLength == nil || *p.MinLength != 1 {
		t.Fatalf("refined output schema %+v", p)
	}
	// The definition itself is untouched: declaring it again refines a
	// fresh inference, not the schema above.
	if labelDef.InputSchema != nil {
		t.Fatal("Define wrote into the definition")
	}

	fn := newFunction(tool)
	got := invokeRPC(t, fn, "tools/call", `{"name":"label_set","arguments":{"label":"much-too-long"}}`)
	b, _ := json.Marshal(got)
	if got["isError"] != true || !strings.Contains(string(b), "VALIDATION_ERROR") {
		t.Fatalf("over-long label answered %s, want a VALIDATION_ERROR", b)
	}
	got = invokeRPC(t, fn, "tools/call", `{"name":"label_set","arguments":{"label":"ok"}}`)
	if sc, _ := json.Marshal(got["structuredContent"]); string(sc) != `{"label":"ok"}` {
		t.Fatalf("result %v", got)
	}
}

// TestRefineNamesAMissingProperty: a refinement of a property the type
// lacks (a renamed field) fails the definition, naming the property.
func TestRefineNamesAMissingProperty(t *testing.T) {
	for name, mod := range map[string]func(*adapter.ToolDef[labelIn, labelOut]){
		"input":  func(d *adapter.ToolDef[labelIn, labelOut]) { d.RefineInput = adapter.Refine{"lable": nil} },
		"output": func(d *adapter.ToolDef[labelIn, labelOut]) { d.RefineOutput = adapter.Refine{"lable": nil} },
	} {
		d := labelDef
		d.Handler = labelHandler
		mod(&d)
		_, err := adapter.Define(d)
		if err == nil || !strings.Contains(err.Error(), `"lable"`) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: Define error %v, want one naming the %s property \"lable\"", name, err, name)
		}
	}
}

// TestDeclareListsLikeDefineAndBindsPerDependency: a declared tool lists
// exactly like the defined one; unbound, a call that reaches it fails closed
// (INTERNAL_SERVER_ERROR); bound, each binding runs with its own dependency;
// Define still refuses a definition with no handler.
func TestDeclareListsLikeDefineAndBindsPerDependency(t *testing.T) {
	declared := adapter.Declare(labelDef, func(prefix string, _ context.Context, _ *adapter.Call, in labelIn) (labelOut, error) {
		return labelOut{Label: prefix + in.Label}, nil
	})
	bound := labelDef
	bound.Handler = labelHandler
	a, _ := json.Marshal(listing(t, declared.Tool()))
	b, _ := json.Marshal(listing(t, adapter.MustDefine(bound)))
	if string(a) != string(b) {
		t.Fatalf("declared tool lists as\n%s\nbound tool as\n%s", a, b)
	}
	got := invokeRPC(t, newFunction(declared.Tool(), quietLogger()), "tools/call", `{"name":"label_set","arguments":{"label":"ok"}}`)
	r, _ := json.Marshal(got)
	if got["isError"] != true || !strings.Contains(string(r), "INTERNAL_SERVER_ERROR") {
		t.Fatalf("calling a declared tool answered %s", r)
	}
	for _, prefix := range []string{"x-", "y-"} {
		got := invokeRPC(t, newFunction(declared.Bind(prefix)), "tools/call", `{"name":"label_set","arguments":{"label":"ok"}}`)
		if sc, _ := got["structuredContent"].(map[string]any); sc["label"] != prefix+"ok" {
			t.Fatalf("bound to %q: %v", prefix, got)
		}
	}
	if _, err := adapter.Define(labelDef); err == nil || !strings.Contains(err.Error(), "no handler") {
		t.Fatalf("Define without a handler: %v", err)
	}
}

// TestDefineRecognisesContent: Define itself knows a Content output, which
// describes blocks rather than data, and infers no output schema for it;
// refining one that does not exist is an error.
func TestDefineRecognisesContent(t *testing.T) {
	h := func(context.Context, *adapter.Call, chartIn) (*adapter.Content, error) {
		return &adapter.Content{Blocks: []adapter.Block{adapter.Text("ok")}}, nil
	}
	tool := adapter.MustDefine(adapter.ToolDef[chartIn, *adapter.Content]{Name: "chart", Handler: h})
	if tool.OutputSchema() != nil || listing(t, tool).OutputSchema != nil {
		t.Fatalf("a *Content tool advertises output schema %v", tool.OutputSchema())
	}
	got := invokeRPC(t, newFunction(tool), "tools/call", `{"name":"chart","arguments":{}}`)
	if b, _ := json.Marshal(got); string(b) != `{"content":[{"text":"ok","type":"text"}]}` {
		t.Fatalf("result %s", b)
	}
	_, err := adapter.Define(adapter.ToolDef[chartIn, *adapter.Content]{Name: "chart", Handler: h, RefineOutput: adapter.Refine{"x": nil}})
	if err == nil || !strings.Contains(err.Error(), "no output schema") {
		t.Fatalf("refining a Content tool's absent output schema: %v", err)
	}
}

// A tool whose handler needs a dependency is declared once; its function's
// main binds it (adapter.Serve), and a test binds it to a test double.
func ExampleDeclare() {
	type searchIn struct {
		Query string `json:"query" jsonschema:"what to look for"`
	}
	type searchOut struct {
		Hits []string `json:"hits"`
	}
	type index []string
	search := adapter.Declare(adapter.ToolDef[searchIn, searchOut]{
		Name:        "search",
		Description: "Searches the index.",
		ReadOnly:    true,
		RefineInput: adapter.Refine{"query": func(p *jsonschema.Schema) { p.MaxLength = jsonschema.Ptr(200) }},
	}, func(ix index, _ context.Context, _ *adapter.Call, in searchIn) (searchOut, error) {
		return searchOut{Hits: slices.DeleteFunc(slices.Clone(ix), func(s string) bool { return !strings.Contains(s, in.Query) })}, nil
	})

	// The catalog entry: no dependency needed.
	fmt.Println(search.Name(), *search.Tool().InputSchema().Properties["query"].MaxLength)

	// The function's main would call adapter.Serve(search, newIndex); here
	// it is bound by hand.
	served := search.Bind(index{"alpha", "beta"})
	fmt.Println(served.Name(), *served.InputSchema().Properties["query"].MaxLength)
	// Output:
	// search 200
	// search 200
}

// TestToolCannotTakeTheGatewaysAuditKey: audit rows are keyed
// "<writer>#<callId>" and a function's role may write its tool's prefix, so
// a tool named as the gateway's rows' writer could write (or pre-empt) the
// gateway's rows. Define refuses the name.
func TestToolCannotTakeTheGatewaysAuditKey(t *testing.T) {
	def := labelDef
	def.Name = "gateway"
	def.Handler = labelHandler
	if _, err := adapter.Define(def); err == nil || !strings.Contains(err.Error(), "reserved") {
		t.Fatalf("Define(%q) = %v, want the name refused as reserved", def.Name, err)
	}
	def.Name = "gateway_status" // a prefix of its own: "gateway_status#…"
	if _, err := adapter.Define(def); err != nil {
		t.Fatal(err)
	}
}
