package adapter_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/mcpfn/mcpfn/adapter"
)

type chartIn struct {
	Title string `json:"title,omitempty"`
}

// invokeRPC calls fn the way a JSON-RPC client invoking Lambda directly does
// and returns the response's result.
func invokeRPC(t *testing.T, fn *adapter.Function, method, params string) map[string]any {
	t.Helper()
	out, err := fn.Invoke(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+params+`}`))
	if err != nil {
		t.Fatal(err)
	}
	var resp struct {
		Result map[string]any `json:"result"`
		Error  any            `json:"error"`
	}
	if err := json.Unmarshal(out, &resp); err != nil || resp.Error != nil {
		t.Fatalf("response %s: %v", out, err)
	}
	return resp.Result
}

func TestContentBlocksOnTheWire(t *testing.T) {
	tool := adapter.MustDefine(adapter.ToolDef[chartIn, adapter.Content]{
		Name: "chart",
		Handler: func(_ context.Context, _ *adapter.Call, in chartIn) (adapter.Content, error) {
			return adapter.Content{Blocks: []adapter.Block{
				adapter.Text(in.Title),
				adapter.Image([]byte{0x89, 'P', 'N', 'G'}, "image/png"),
				adapter.Audio([]byte("RIFF"), "audio/wav"),
				adapter.TextResource("file:///chart.csv", "text/csv", "a,b\n1,2\n"),
				adapter.BlobResource("file:///chart.bin", "application/octet-stream", []byte{0, 1}),
			}}, nil
		},
	})
	fn := newFunction(tool)
	got := invokeRPC(t, fn, "tools/call", `{"name":"chart","arguments":{"title":"Sales"}}`)
	b, _ := json.Marshal(got)
	want := `{"content":[` +
		`{"text":"Sales","type":"text"},` +
		`{"data":"iVBORw==","mimeType":"image/png","type":"image"},` +
		`{"data":"UklGRg==","mimeType":"audio/wav","type":"audio"},` +
		`{"resource":{"mimeType":"text/csv","text":"a,b\n1,2\n","uri":"file:///chart.csv"},"type":"resource"},` +
		`{"resource":{"blob":"AAE=","mimeType":"application/octet-stream","uri":"file:///chart.bin"},"type":"resource"}]}`
	if string(b) != want {
		t.Fatalf("result\n got %s\nwant %s", b, want)
	}

	// Without an explicit output schema a Content tool advertises none: a
	// schema would oblige every result to carry structured content.
	list := invokeRPC(t, fn, "tools/list", `{}`)
	lb, _ := json.Marshal(list)
	if strings.Contains(string(lb), "outputSchema") {
		t.Fatalf("tools/list advertises an output schema for a Content tool: %s", lb)
	}
	if out := listing(t, tool).OutputSchema; out != nil {
		t.Fatalf("Listing().OutputSchema = %s, want none", out)
	}
}

func TestContentStructuredAgainstOutputSchema(t *testing.T) {
	schema := &jsonschema.Schema{
		Type:       "object",
		Properties: map[string]*jsonschema.Schema{"points": {Type: "integer"}},
		Required:   []string{"points"},
	}
	var structured any
	tool := adapter.MustDefine(adapter.ToolDef[chartIn, adapter.Content]{
		Name:         "chart",
		OutputSchema: schema,
		Handler: func(context.Context, *adapter.Call, chartIn) (adapter.Content, error) {
			return adapter.Content{Blocks: []adapter.Block{adapter.Text("2 points")}, Structured: structured}, nil
		},
	})
	fn := newFunction(tool)

	structured = map[string]int{"points": 2}
	got := invokeRPC(t, fn, "tools/call", `{"name":"chart","arguments":{}}`)
	if sc, _ := json.Marshal(got["structuredContent"]); string(sc) != `{"points":2}` || got["isError"] != nil {
		t.Fatalf("result %v", got)
	}

	for name, s := range map[string]any{
		"mismatch": map[string]string{"points": "two"},
		"missing":  nil,
	} {
		structured = s
		got := invokeRPC(t, fn, "tools/call", `{"name":"chart","arguments":{}}`)
		b, _ := json.Marshal(got)
		if got["isError"] != true || !strings.Contains(string(b), "INTERNAL_SERVER_ERROR") {
			t.Errorf("%s: result %s, want an INTERNAL_SERVER_ERROR tool error", name, b)
		}
	}
}

func TestContentPointerFromAfterHandle(t *testing.T) {
	// A hook may replace a JSON output with content blocks; the result
	// builder recognises *Content too.
	tool := widgetTool(t)
	fn := newFunction(tool, adapter.WithHooks(adapter.Hooks{
		AfterHandle: func(context.Context, *adapter.Call, any) (any, error) {
			return &adapter.Content{Blocks: []adapter.Block{adapter.Text("replaced")}}, nil
		},
	}))
	got := invokeRPC(t, fn, "tools/call", `{"name":"widget_update","arguments":{"entityId":"w1"}}`)
	b, _ := json.Marshal(got)
	// widget_update has an inferred output schema, so Content without
	// Structured breaks its contract.
	if got["isError"] != true || !strings.Contains(string(b), "INTERNAL_SERVER_ERROR") {
		t.Fatalf("result %s", b)
	}
}
