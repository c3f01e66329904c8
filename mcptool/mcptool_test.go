package mcptool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/mcptool"
)

type note struct {
	ID   string `json:"id" jsonschema:"the note's id, <= 64 characters & no spaces"`
	Body string `json:"body,omitempty"`
}

// tools are one of each kind a function lists: typed with scopes and every
// annotation, a Content tool with no output schema, and forwarded (its
// schemas as a catalog wrote them).
func tools(t *testing.T) []*adapter.Tool {
	t.Helper()
	typed := adapter.MustDefine(adapter.ToolDef[note, note]{
		Name: "note_delete", Title: "Delete a note", Description: "Deletes a note.",
		Destructive: true, Scopes: []string{"notes:write", "notes:admin"},
		Handler: func(context.Context, *adapter.Call, note) (note, error) { return note{}, nil },
	})
	content := adapter.MustDefine(adapter.ToolDef[note, adapter.Content]{
		Name: "note_show", Description: "Shows a note.", ReadOnly: true, Idempotent: true,
		Handler: func(context.Context, *adapter.Call, note) (adapter.Content, error) { return adapter.Content{}, nil },
	})
	decl, err := json.Marshal(typed.Declaration())
	if err != nil {
		t.Fatal(err)
	}
	fwd, err := adapter.ForwardedTool(decl)
	if err != nil {
		t.Fatal(err)
	}
	return []*adapter.Tool{typed, content, fwd}
}

// TestOfIsTheListing: the go-sdk's tool marshals to exactly the bytes of the
// adapter's listing (what a function's own tools/list answers), field names,
// order and omissions included.
func TestOfIsTheListing(t *testing.T) {
	for _, tool := range tools(t) {
		l, err := tool.Listing()
		if err != nil {
			t.Fatal(err)
		}
		mt, err := mcptool.Of(tool)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(l)
		got, err := json.Marshal(mt)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: the go-sdk's tool marshals to\n%s\nthe listing to\n%s", tool.Name(), got, want)
		}
	}
}

// TestTheGoSDKReadsEveryField: a listing read into the go-sdk's own type and
// written again says the same (compared as JSON values: the go-sdk reads a
// schema into a map), so the listing has no field the go-sdk's Tool does
// not know, and every field the test's tools set is there.
func TestTheGoSDKReadsEveryField(t *testing.T) {
	for _, tool := range tools(t) {
		l, err := tool.Listing()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(l)
		var mt mcp.Tool
		if err := json.Unmarshal(b, &mt); err != nil {
			t.Fatal(err)
		}
		again, _ := json.Marshal(&mt)
		if g, w := canonical(t, again), canonical(t, b); g != w {
			t.Errorf("%s: through the go-sdk's Tool\n%s\nlisted\n%s", tool.Name(), g, w)
		}
		if tool.Name() == "note_delete" && (mt.Annotations == nil || mt.Annotations.DestructiveHint == nil || !*mt.Annotations.DestructiveHint ||
			mt.Meta["mcpfn/scopes"] == nil || mt.OutputSchema == nil || mt.Title != "Delete a note") {
			t.Errorf("note_delete read back as %+v", mt)
		}
		if tool.Name() == "note_show" && mt.OutputSchema != nil {
			t.Errorf("a Content tool without an output schema lists one: %s", b)
		}
	}
}

// TestServedByTheGoSDK: a go-sdk server lists the tool as its listing says.
func TestServedByTheGoSDK(t *testing.T) {
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "mcptool-test", Version: "1"}, nil)
	want := map[string]string{}
	for _, tool := range tools(t) {
		mt, err := mcptool.Of(tool)
		if err != nil {
			t.Fatal(err)
		}
		l, _ := tool.Listing()
		if _, dup := want[mt.Name]; dup {
			// The forwarded copy of a tool: a name of its own here.
			mt.Name += "_forwarded"
			l.Name = mt.Name
		}
		b, _ := json.Marshal(l)
		want[mt.Name] = canonical(t, b)
		server.AddTool(mt, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	}
	ct, st := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != len(want) {
		t.Fatalf("listed %d tools, want %d", len(res.Tools), len(want))
	}
	for _, got := range res.Tools {
		b, _ := json.Marshal(got)
		if g, w := canonical(t, b), want[got.Name]; g != w {
			t.Errorf("%s listed as\n%s\nwant\n%s", got.Name, g, w)
		}
	}
}

// canonical is b's JSON value written in one way.
func canonical(t *testing.T, b []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(v)
	return string(out)
}
