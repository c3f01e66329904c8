package adapter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/internal/lambdatest"
	"github.com/mcpfn/mcpfn/wire"
)

// pagesIn drives the test's long-running tool.
type pagesIn struct {
	Pages   int    `json:"pages"`
	GapMs   int    `json:"gapMs,omitempty"`
	LogAt   string `json:"logAt,omitempty"` // log one message at this level per page
	WaitCtx bool   `json:"waitCtx,omitempty"`
}

type pagesOut struct {
	Pages int `json:"pages"`
}

// pagesTool reports progress page by page (0/n … n/n, as the conformance
// fixture does), optionally sleeping between pages, logging, or then
// waiting until its context ends. gate, when set, is received from once
// after the first page.
func pagesTool(t testing.TB, gate chan struct{}, mod ...func(*adapter.ToolDef[pagesIn, pagesOut])) *adapter.Tool {
	t.Helper()
	d := adapter.ToolDef[pagesIn, pagesOut]{
		Name: "pages_digest", Description: "Digests pages.",
		Handler: func(ctx context.Context, call *adapter.Call, in pagesIn) (pagesOut, error) {
			for i := 0; i <= in.Pages; i++ {
				call.Progress(float64(i), float64(in.Pages), fmt.Sprintf("page %d", i))
				if in.LogAt != "" {
					call.Log(in.LogAt, map[string]int{"page": i})
				}
				if i == 0 && gate != nil {
					<-gate
				}
				if in.GapMs > 0 && i < in.Pages {
					time.Sleep(time.Duration(in.GapMs) * time.Millisecond)
				}
			}
			if in.WaitCtx {
				<-ctx.Done()
				return pagesOut{}, ctx.Err()
			}
			return pagesOut{Pages: in.Pages}, nil
		},
	}
	for _, m := range mod {
		m(&d)
	}
	tool, err := adapter.Define(d)
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

// pagesEnvelope is a signed envelope for pages_digest; stream as the
// gateway sets it when it will relay.
func pagesEnvelope(t testing.TB, callID string, in pagesIn, stream *wire.StreamRequest) []byte {
	t.Helper()
	args := mustJSON(t, in)
	return mustJSON(t, wire.Envelope{
		Version: wire.EnvelopeVersion, CallID: callID,
		Params:    wire.EnvelopeParams{Name: "pages_digest", Arguments: args},
		MCP:       wire.EnvelopeMCP{Era: adapter.EraModern, Method: "tools/call", ProtocolVersion: "2026-07-28"},
		CallToken: lambdatest.Token(testFunction, "pages_digest", callID, nil, args),
		Stream:    stream,
	})
}

// invokeStreaming calls fn the way Start serves it: aws-lambda-go's handler
// around fn.Streaming(), which reads the streamed reader to its end.
func invokeStreaming(t testing.TB, fn *adapter.Function, payload []byte) []byte {
	t.Helper()
	ctx, cancel := lambdatest.Context(context.Background(), lambdatest.Invocation{RequestID: "req-stream", Timeout: 10 * time.Second})
	defer cancel()
	out, err := lambda.NewHandler(fn.Streaming()).Invoke(ctx, payload)
	if err != nil {
		t.Fatalf("Invoke returned a Lambda function error: %v", err)
	}
	return out
}

// readStream splits a stream into its frames and final payload.
func readStream(t testing.TB, r io.Reader) (frames []wire.Frame, final []byte) {
	t.Helper()
	return readRest(t, wire.NewStreamReader(r))
}

// readRest reads what is left of a stream.
func readRest(t testing.TB, sr *wire.StreamReader) (frames []wire.Frame, final []byte) {
	t.Helper()
	for {
		f, fin, err := sr.Next()
		if err == io.EOF {
			return frames, final
		}
		if err != nil {
			t.Fatalf("reading the stream: %v", err)
		}
		if f != nil {
			frames = append(frames, *f)
		} else {
			final = fin
		}
	}
}

// TestStreamedCallSendsProgressThenTheUnchangedAnswer: the conformance
// fixture's 0/50/100 reports all arrive, in order, before the final line,
// and the final line is what the unstreamed call answers.
func TestStreamedCallSendsProgressThenTheUnchangedAnswer(t *testing.T) {
	fn := newFunction(pagesTool(t, nil), quietLogger())
	out := invokeStreaming(t, fn, pagesEnvelope(t, "c-stream-1", pagesIn{Pages: 2}, &wire.StreamRequest{Progress: true}))
	frames, final := readStream(t, bytes.NewReader(out))
	var got []string
	for _, f := range frames {
		got = append(got, fmt.Sprintf("%s %g/%g %s", f.Kind, *f.Progress, *f.Total, f.Message))
	}
	if want := "progress 0/2 page 0,progress 1/2 page 1,progress 2/2 page 2"; strings.Join(got, ",") != want {
		t.Fatalf("frames = %v, want %s", got, want)
	}
	res, rpcErr := envelopeResult(t, final)
	if rpcErr != nil || res.IsError || string(res.StructuredContent) != `{"pages":2}` {
		t.Fatalf("final = %s", final)
	}
	plain := invokeStreaming(t, fn, pagesEnvelope(t, "c-stream-1", pagesIn{Pages: 2}, nil))
	if !bytes.Equal(plain, final) {
		t.Fatalf("the streamed final line differs from the plain answer:\n%s\n%s", final, plain)
	}
}

// TestUnstreamedCallsAnswerOneJSONPayload: without Stream (and for every
// other format) the answer is Invoke's, with no frame — Progress is a no-op.
func TestUnstreamedCallsAnswerOneJSONPayload(t *testing.T) {
	fn := newFunction(pagesTool(t, nil), quietLogger())
	payload := pagesEnvelope(t, "c-plain", pagesIn{Pages: 3, LogAt: "error"}, nil)
	out := invokeStreaming(t, fn, payload)
	if bytes.Contains(out, []byte(`"frame"`)) || bytes.Count(bytes.TrimSpace(out), []byte("\n")) != 0 {
		t.Fatalf("an unstreamed call answered frames: %s", out)
	}
	if want := invoke(t, fn, payload, lambdaInvoke{RequestID: "req-stream"}); !bytes.Equal(out, want) {
		t.Fatalf("Streaming answered\n%s\nInvoke answered\n%s", out, want)
	}
}

// TestStreamFramesLeaveBeforeTheHandlerEnds: the first frame can be read
// while the handler is still running — frames are written as they happen,
// not buffered to the end.
func TestStreamFramesLeaveBeforeTheHandlerEnds(t *testing.T) {
	gate := make(chan struct{})
	fn := newFunction(pagesTool(t, gate), quietLogger())
	ctx, cancel := lambdatest.Context(context.Background(), lambdatest.Invocation{RequestID: "req-incr", Timeout: 10 * time.Second})
	defer cancel()
	r := fn.InvokeStream(ctx, pagesEnvelope(t, "c-incr", pagesIn{Pages: 1}, &wire.StreamRequest{Progress: true}))
	sr := wire.NewStreamReader(r)
	f, _, err := sr.Next() // the handler is blocked on gate after page 0
	if err != nil || f == nil || *f.Progress != 0 {
		t.Fatalf("first frame while the handler runs: %+v, %v", f, err)
	}
	close(gate)
	rest, final := readRest(t, sr)
	if len(rest) != 1 || *rest[0].Progress != 1 || len(final) == 0 {
		t.Fatalf("after the first frame: %+v, final %s", rest, final)
	}
}

// TestProgressIsThrottledAndTheLastIsKept: a handler reporting 1,000 times
// at once sends the burst, then the coalesced latest when a slot frees,
// and always its last report before the result; with time between
// reports, every report passes.
func TestProgressIsThrottledAndTheLastIsKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fn := newFunction(pagesTool(t, nil), quietLogger())
		out := invokeStreaming(t, fn, pagesEnvelope(t, "c-flood", pagesIn{Pages: 1000}, &wire.StreamRequest{Progress: true}))
		frames, final := readStream(t, bytes.NewReader(out))
		if len(frames) != adapter.ProgressBurst+1 {
			t.Fatalf("%d frames for 1,001 reports at once; want the burst of %d and the last", len(frames), adapter.ProgressBurst)
		}
		if last := frames[len(frames)-1]; *last.Progress != 1000 {
			t.Fatalf("last frame %g, want the last report (1000)", *last.Progress)
		}
		if len(final) == 0 {
			t.Fatal("no final payload")
		}

		// 30 reports 100 ms apart (twice the rate): after the burst, one
		// coalesced report per slot, none lost at the end, none out of order.
		out = invokeStreaming(t, fn, pagesEnvelope(t, "c-paced", pagesIn{Pages: 29, GapMs: 100}, &wire.StreamRequest{Progress: true}))
		frames, _ = readStream(t, bytes.NewReader(out))
		prev := -1.0
		for _, f := range frames {
			if *f.Progress <= prev {
				t.Fatalf("progress went from %g to %g", prev, *f.Progress)
			}
			prev = *f.Progress
		}
		if prev != 29 || len(frames) < 20 || len(frames) > 30 {
			t.Fatalf("%d frames ending at %g for 30 paced reports", len(frames), prev)
		}
	})
}

// TestLogFramesOnlyAtTheClientsLevel: without a log level no log frame is
// sent (SEP-2575: no notifications/message unless asked); with one, only
// messages at or above it, named by the tool.
func TestLogFramesOnlyAtTheClientsLevel(t *testing.T) {
	fn := newFunction(pagesTool(t, nil), quietLogger())
	count := func(in pagesIn, stream *wire.StreamRequest) (logs []wire.Frame) {
		frames, _ := readStream(t, bytes.NewReader(invokeStreaming(t, fn, pagesEnvelope(t, "c-log", in, stream))))
		for _, f := range frames {
			if f.Kind == wire.FrameLog {
				logs = append(logs, f)
			}
		}
		return logs
	}
	if n := len(count(pagesIn{Pages: 1, LogAt: "error"}, &wire.StreamRequest{Progress: true})); n != 0 {
		t.Fatalf("%d log frames without a log level", n)
	}
	if n := len(count(pagesIn{Pages: 1, LogAt: "info"}, &wire.StreamRequest{LogLevel: "warning"})); n != 0 {
		t.Fatalf("%d info frames at level warning", n)
	}
	logs := count(pagesIn{Pages: 1, LogAt: "error"}, &wire.StreamRequest{LogLevel: "warning"})
	if len(logs) != 2 || logs[0].Level != "error" || logs[0].Logger != "pages_digest" || string(logs[1].Data) != `{"page":1}` {
		t.Fatalf("log frames = %+v", logs)
	}
	var data map[string]int
	if err := json.Unmarshal(logs[0].Data, &data); err != nil || data["page"] != 0 {
		t.Fatalf("log data %s", logs[0].Data)
	}
}
