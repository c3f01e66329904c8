package adapter_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/mcpfn/mcpfn/adapter"
)

// benchCtx is an invocation context as aws-lambda-go builds it.
func benchCtx(b *testing.B) context.Context {
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(time.Hour))
	b.Cleanup(cancel)
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: "bench", InvokedFunctionArn: "arn:aws:lambda:us-east-1:1:function:w"})
	//lint:ignore SA1029 aws-lambda-go's own key
	return context.WithValue(ctx, "x-amzn-trace-id", "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")
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
	h := lambda.NewHandler(adapter.New(widgetTool(b), adapter.WithHooks(adapter.Hooks{
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
