package adapter_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/internal/lambdatest"
)

// benchCtx is an invocation context as aws-lambda-go builds it.
func benchCtx(b *testing.B) context.Context {
	ctx, cancel := lambdatest.Context(context.Background(), lambdatest.Invocation{
		RequestID: "bench", Timeout: time.Hour,
		Trace: "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1",
	})
	b.Cleanup(cancel)
	return ctx
}

// BenchmarkDirect is the floor: the handler called as a Go function, with
// the JSON decode and encode any Lambda handler pays.
func BenchmarkDirect(b *testing.B) {
	ctx := benchCtx(b)
	payload := []byte(`{"entityId":"w-1","note":"hello"}`)
	call := &adapter.Call{}
	b.ReportAllocs()
	for b.Loop() {
		var in widgetIn
		if err := json.Unmarshal(payload, &in); err != nil {
			b.Fatal(err)
		}
		out, err := widgetHandler(ctx, call, in)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := json.Marshal(out); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAdapter is the whole adapter path with no audit sink: decode →
// context → hooks → validate → handler → validate output → envelope, through
// aws-lambda-go's handler wrapper.
func BenchmarkAdapter(b *testing.B) {
	ctx := benchCtx(b)
	h := lambda.NewHandler(newFunction(widgetTool(b), adapter.WithHooks(adapter.Hooks{
		AfterToolCall: func(context.Context, *adapter.Call, *adapter.Outcome) {},
	})))
	payload := envelopeOf(b, "bench-call", "widget_update", map[string]any{"entityId": "w-1", "note": "hello"},
		&adapter.Identity{Subject: "alice", AuthMethod: "jwt"})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.Invoke(ctx, payload); err != nil {
			b.Fatal(err)
		}
	}
}

// shelfOut is an output with slices at two depths, as a list tool returns
// them.
type shelfOut struct {
	Widgets []shelfWidget `json:"widgets"`
	Next    string        `json:"next,omitempty"`
}

type shelfWidget struct {
	ID   string   `json:"id"`
	Tags []string `json:"tags"`
}

// BenchmarkAdapterSliceOutput is BenchmarkAdapter for a tool whose output
// holds slices: "filled" has none nil, "nil" has a nil slice in each of its
// 20 widgets (written as [] since decision 0028).
func BenchmarkAdapterSliceOutput(b *testing.B) {
	for _, c := range []struct {
		name string
		tags []string
	}{{"filled", []string{"blue"}}, {"nil", nil}} {
		b.Run(c.name, func(b *testing.B) {
			out := shelfOut{Widgets: make([]shelfWidget, 20)}
			for i := range out.Widgets {
				out.Widgets[i] = shelfWidget{ID: "w-" + string(rune('a'+i)), Tags: c.tags}
			}
			tool := adapter.MustDefine(adapter.ToolDef[widgetIn, shelfOut]{
				Name:    "widget_update",
				Handler: func(context.Context, *adapter.Call, widgetIn) (shelfOut, error) { return out, nil },
			})
			ctx := benchCtx(b)
			h := lambda.NewHandler(newFunction(tool))
			payload := envelopeOf(b, "bench-call", "widget_update", map[string]any{"entityId": "w-1"}, nil)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := h.Invoke(ctx, payload); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
