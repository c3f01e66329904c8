package adapter_test

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/mcpfn/mcpfn/adapter"
)

// The shapes decision 0028 is about: Go's nil at every depth.

type portableLeaf struct {
	Names []string `json:"names"`
}

type portableInner struct {
	Leaves []portableLeaf `json:"leaves"`
}

// csvList marshals itself (as one string): what it writes is its own, so
// its schema is left as jsonschema-go infers it.
type csvList []string

func (c csvList) MarshalJSON() ([]byte, error) { return json.Marshal(strings.Join(c, ",")) }

type portableShapes struct {
	Tags    []string            `json:"tags" jsonschema:"labels"`
	Opt     []int               `json:"opt,omitempty"`
	Inner   portableInner       `json:"inner"`
	Grid    [][]int             `json:"grid"`
	Pair    [2]string           `json:"pair"`
	Attrs   map[string][]string `json:"attrs"`
	Limit   *int                `json:"limit,omitempty"`
	Ref     *portableInner      `json:"ref,omitempty"`
	Tagged  *[]string           `json:"tagged,omitzero"`
	When    *time.Time          `json:"when,omitempty"`
	Blob    []byte              `json:"blob" jsonschema:"the file"`
	OptBlob []byte              `json:"optBlob,omitempty"`
	Maybe   *string             `json:"maybe"`
	Sparse  []*int              `json:"sparse"`
	ByName  map[string]*int     `json:"byName"`
	Deep    **int               `json:"deep,omitempty"`
	CSV     csvList             `json:"csv"`
	Skipped []string            `json:"-"`
}

// nullablePaths lists where a schema still allows null, as JSON paths.
func nullablePaths(s *jsonschema.Schema, path string) []string {
	if s == nil {
		return nil
	}
	var out []string
	if s.Type == "null" || slices.Contains(s.Types, "null") {
		out = append(out, path)
	}
	for name, p := range s.Properties {
		out = append(out, nullablePaths(p, path+"."+name)...)
	}
	out = append(out, nullablePaths(s.Items, path+"[]")...)
	out = append(out, nullablePaths(s.AdditionalProperties, path+"{}")...)
	slices.Sort(out)
	return out
}

// schemaEqual compares s, marshalled, with the JSON want.
func schemaEqual(t *testing.T, what string, s *jsonschema.Schema, want string) {
	t.Helper()
	got, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: bad want: %v", what, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s = %s\nwant %s", what, got, want)
	}
}

func TestInferredSchemasAllowNullOnlyWhereNullIsWritten(t *testing.T) {
	tool := adapter.Declare(adapter.ToolDef[portableShapes, portableShapes]{Name: "shapes"}, func(struct{}, context.Context, *adapter.Call, portableShapes) (portableShapes, error) {
		return portableShapes{}, nil
	}).Tool()
	for _, s := range []*jsonschema.Schema{tool.InputSchema(), tool.OutputSchema()} {
		// Only pointers whose nil encoding/json writes as null: a field
		// without omitempty, a slice element, a map value, the pointer
		// under an omitted pointer; and the type that marshals itself.
		if got, want := nullablePaths(s, ""), []string{".byName{}", ".csv", ".deep", ".maybe", ".sparse[]"}; !slices.Equal(got, want) {
			t.Errorf("nullable at %v, want only %v", got, want)
		}
		p := s.Properties
		schemaEqual(t, "tags", p["tags"], `{"type":"array","description":"labels","items":{"type":"string"}}`)
		schemaEqual(t, "opt", p["opt"], `{"type":"array","items":{"type":"integer"}}`)
		schemaEqual(t, "grid", p["grid"], `{"type":"array","items":{"type":"array","items":{"type":"integer"}}}`)
		schemaEqual(t, "pair", p["pair"], `{"type":"array","items":{"type":"string"},"minItems":2,"maxItems":2}`)
		schemaEqual(t, "attrs", p["attrs"], `{"type":"object","additionalProperties":{"type":"array","items":{"type":"string"}}}`)
		schemaEqual(t, "inner.leaves", p["inner"].Properties["leaves"].Items.Properties["names"], `{"type":"array","items":{"type":"string"}}`)
		schemaEqual(t, "limit", p["limit"], `{"type":"integer"}`)
		schemaEqual(t, "tagged", p["tagged"], `{"type":"array","items":{"type":"string"}}`)
		schemaEqual(t, "when", p["when"], `{"type":"string"}`)
		schemaEqual(t, "ref", p["ref"].Properties["leaves"], `{"type":"array","items":{"type":"object","properties":{"names":{"type":"array","items":{"type":"string"}}},"required":["names"],"additionalProperties":false}}`)
		// []byte is what encoding/json writes: a base64 string.
		schemaEqual(t, "blob", p["blob"], `{"type":"string","contentEncoding":"base64","description":"the file"}`)
		schemaEqual(t, "optBlob", p["optBlob"], `{"type":"string","contentEncoding":"base64"}`)
		schemaEqual(t, "maybe", p["maybe"], `{"type":["null","string"]}`)
		schemaEqual(t, "sparse", p["sparse"], `{"type":"array","items":{"type":["null","integer"]}}`)
		// Required is jsonschema-go's rule, unchanged: every field without
		// omitempty or omitzero.
		want := []string{"tags", "inner", "grid", "pair", "attrs", "blob", "maybe", "sparse", "byName", "csv"}
		if !slices.Equal(s.Required, want) {
			t.Errorf("required = %v, want %v", s.Required, want)
		}
	}
}

// TestGivenSchemasAreLeftAsGiven: a schema in ToolDef is the tool's own
// contract, nullable types included.
func TestGivenSchemasAreLeftAsGiven(t *testing.T) {
	given := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{
		"tags": {Types: []string{"null", "array"}, Items: &jsonschema.Schema{Type: "string"}},
	}}
	tool := adapter.Declare(adapter.ToolDef[portableLeaf, portableLeaf]{Name: "given", InputSchema: given, OutputSchema: given}, func(struct{}, context.Context, *adapter.Call, portableLeaf) (portableLeaf, error) {
		return portableLeaf{}, nil
	}).Tool()
	for _, s := range []*jsonschema.Schema{tool.InputSchema(), tool.OutputSchema()} {
		schemaEqual(t, "given", s, `{"type":"object","properties":{"tags":{"type":["null","array"],"items":{"type":"string"}}}}`)
	}
}

// shelf is an output with nil at every depth the adapter writes as empty.
type shelf struct {
	ID     string              `json:"id"`
	Tags   []string            `json:"tags"`
	Inner  portableInner       `json:"inner"`
	Grid   [][]int             `json:"grid"`
	Attrs  map[string][]string `json:"attrs"`
	Counts map[string]int      `json:"counts"`
	Blob   []byte              `json:"blob"`
	Opt    []int               `json:"opt,omitempty"`
	Ref    *portableInner      `json:"ref,omitempty"`
	Maybe  *string             `json:"maybe"`
	Sparse []*int              `json:"sparse"`
	Quote  string              `json:"quote"`
	HTML   map[string][]string `json:"a<b>&c"`
}

func TestNilsInTypedOutputAreWrittenEmpty(t *testing.T) {
	nilShelf := shelf{
		ID:    "null",
		Inner: portableInner{Leaves: []portableLeaf{{}, {Names: []string{"null"}}}},
		Grid:  [][]int{nil, {1}},
		Attrs: map[string][]string{"null": nil, `"k\"`: {"v"}},
		Ref:   &portableInner{},
		// Strings that look like what is rewritten stay as they are.
		Quote:  `{"tags":null} \"null\\" null`,
		Sparse: []*int{nil},
		HTML:   map[string][]string{"x": nil},
	}
	const want = `{"id":"null","tags":[],"inner":{"leaves":[{"names":[]},{"names":["null"]}]},"grid":[[],[1]],` +
		`"attrs":{"\"k\\\"":["v"],"null":[]},"counts":{},"blob":"","ref":{"leaves":[]},"maybe":null,"sparse":[null],` +
		`"quote":"{\"tags\":null} \\\"null\\\\\" null","a\u003cb\u003e\u0026c":{"x":[]}}`
	// The schemas: inferred (its output trusted), refined (validated), and
	// an AfterHandle that hands back a value of the same type (validated).
	defs := map[string]func(*adapter.ToolDef[widgetIn, shelf]){
		"inferred": func(*adapter.ToolDef[widgetIn, shelf]) {},
		"refined": func(d *adapter.ToolDef[widgetIn, shelf]) {
			d.RefineOutput = adapter.Refine{"tags": func(p *jsonschema.Schema) { p.MaxItems = jsonschema.Ptr(3) }}
		},
	}
	for name, mod := range defs {
		d := adapter.ToolDef[widgetIn, shelf]{
			Name:    "widget_update",
			Handler: func(context.Context, *adapter.Call, widgetIn) (shelf, error) { return nilShelf, nil },
		}
		mod(&d)
		tool := adapter.MustDefine(d)
		for _, hooks := range []adapter.Hooks{{}, {AfterHandle: func(_ context.Context, _ *adapter.Call, out any) (any, error) { return out, nil }}} {
			res, rpcErr := runOne(t, newFunction(tool, adapter.WithHooks(hooks)), map[string]any{"entityId": "w-1"}, nil)
			if rpcErr != nil || res.IsError {
				t.Fatalf("%s: want success, got %+v %+v", name, res, rpcErr)
			}
			if string(res.StructuredContent) != want {
				t.Errorf("%s: structuredContent =\n%s\nwant\n%s", name, res.StructuredContent, want)
			}
			if res.Content[0].Text != string(res.StructuredContent) {
				t.Errorf("%s: the text content does not mirror the structured output: %s", name, res.Content[0].Text)
			}
			// What a client does with structuredContent: validate it against
			// the advertised schema.
			var v any
			if err := json.Unmarshal(res.StructuredContent, &v); err != nil {
				t.Fatal(err)
			}
			r, err := tool.OutputSchema().Resolve(nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Validate(v); err != nil {
				t.Errorf("%s: structuredContent does not match the output schema: %v", name, err)
			}
		}
	}
}

// TestReplacedOutputOfAnotherTypeIsNotRewritten: writing nil as empty is a
// rule of the handler's output type; a hook's value of another type is
// validated as it is.
func TestReplacedOutputOfAnotherTypeIsNotRewritten(t *testing.T) {
	tool := adapter.MustDefine(adapter.ToolDef[widgetIn, portableLeaf]{
		Name:    "widget_update",
		Handler: func(context.Context, *adapter.Call, widgetIn) (portableLeaf, error) { return portableLeaf{}, nil },
	})
	replace := adapter.Hooks{AfterHandle: func(context.Context, *adapter.Call, any) (any, error) {
		return map[string]any{"names": nil}, nil
	}}
	rec := newRecorder()
	res, _ := runOne(t, newFunction(tool, adapter.WithHooks(replace, rec.hooks())), map[string]any{"entityId": "w-1"}, nil)
	if res.errorBody(t).Error != "INTERNAL_SERVER_ERROR" || rec.only(t).Stage != adapter.StageValidateOutput {
		t.Fatalf("a replacement with null where the schema says array: %+v", rec.only(t))
	}
}

// TestNullIsRefusedWhereTheSchemaSaysArray: the input schema is the one
// advertised; an optional slice, map or pointer is left out to say "none",
// and null is a VALIDATION_ERROR, as for any other type.
func TestNullIsRefusedWhereTheSchemaSaysArray(t *testing.T) {
	type in struct {
		Tags  []string          `json:"tags"`
		Opt   []string          `json:"opt,omitempty"`
		Attrs map[string]string `json:"attrs,omitempty"`
		Limit *int              `json:"limit,omitempty"`
		Blob  []byte            `json:"blob,omitempty"`
	}
	var seen in
	tool := adapter.MustDefine(adapter.ToolDef[in, widgetOut]{
		Name: "widget_update",
		Handler: func(_ context.Context, _ *adapter.Call, v in) (widgetOut, error) {
			seen = v
			return widgetOut{EntityID: "w"}, nil
		},
	})
	fn := newFunction(tool)
	for _, args := range []string{`{"tags":[]}`, `{"tags":["a"],"opt":["b"],"attrs":{"k":"v"},"limit":0,"blob":"aGk="}`} {
		res, rpcErr := runOne(t, fn, json.RawMessage(args), nil)
		if rpcErr != nil || res.IsError {
			t.Errorf("%s: want success, got %+v %+v", args, res, rpcErr)
		}
	}
	if string(seen.Blob) != "hi" || seen.Limit == nil || *seen.Limit != 0 {
		t.Errorf("the handler saw %+v", seen)
	}
	for _, args := range []string{`{}`, `{"tags":null}`, `{"tags":[],"opt":null}`, `{"tags":[],"attrs":null}`,
		`{"tags":[],"limit":null}`, `{"tags":[],"blob":null}`, `{"tags":[],"blob":[104,105]}`, `{"tags":[],"blob":"!!"}`} {
		res, rpcErr := runOne(t, fn, json.RawMessage(args), nil)
		if rpcErr != nil {
			t.Fatalf("%s: %+v", args, rpcErr)
		}
		if b := res.errorBody(t); b.Error != "VALIDATION_ERROR" {
			t.Errorf("%s: got %+v, want VALIDATION_ERROR", args, b)
		}
	}
}
