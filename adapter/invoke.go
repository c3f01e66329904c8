package adapter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/mcpfn/mcpfn/wire"
)

// Invoke handles one Lambda invocation. It never returns an error: every
// failure is answered in the format the caller spoke, so a malformed payload
// is a clear result and an audit row rather than a Lambda function error.
func (f *Function) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	started := time.Now()
	lc, _ := lambdacontext.FromContext(ctx)
	defer f.answered(ctx, lc)
	return f.answer(ctx, decodeInvocation(payload, lc, f.opts.limits), lc, started)
}

// answered tells the after-response audit (WithAuditQueue) that the
// invocation's answer is out of the function's hands: its rows are built
// and written now. Under Start (hold) it returns once they are settled, or
// auditMargin before the invocation's deadline (the rows left are then
// printed as fallback lines): the runtime asks for the next invocation only
// after, so Lambda neither freezes nor reuses the environment before.
func (f *Function) answered(ctx context.Context, lc *lambdacontext.LambdaContext) {
	if f.opts.answered != nil && lc != nil {
		f.opts.answered(lc.AwsRequestID)
		if f.opts.hold != nil {
			var limit time.Time
			if d, ok := ctx.Deadline(); ok {
				limit = d.Add(-auditMargin)
			}
			f.opts.hold(lc.AwsRequestID, limit)
		}
	}
}

// answerReader is an answer handed to the runtime as a reader: the
// invocation is answered once the runtime is done with it. aws-lambda-go
// closes the reader it was handed once it has posted it and the Runtime API
// has accepted it, and only then asks for the next invocation (its
// handleInvoke defers the Close of a response that is an io.Closer): under
// Start (atClose) the invocation ends there and its rows are written
// there, after the answer is out and before the environment can be frozen
// or reused (docs/decisions/0039-audit-row-from-snapshot.md). For any other
// reader of InvokeStream, reading it to its end or closing it ends the
// invocation, whichever comes first.
type answerReader struct {
	r       io.Reader
	once    sync.Once
	end     func()
	atClose bool
}

func (a *answerReader) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	if err != nil && !a.atClose {
		a.once.Do(a.end)
	}
	return n, err
}

// Close ends the invocation, and a stream's pipe: a runtime that stopped
// reading (its POST failed) does not leave the call's writer blocked.
func (a *answerReader) Close() error {
	a.once.Do(a.end)
	if c, ok := a.r.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// InvokeStream is Invoke for a runtime that streams responses ([Start]
// serves it): an envelope that asks for a stream (its Stream) is answered
// with NDJSON (package wire, stream.go) — the call's progress and log
// frames as they happen, then the payload Invoke would have answered —
// written into the reader while the call runs. Every other payload is
// answered exactly as Invoke answers it.
func (f *Function) InvokeStream(ctx context.Context, payload []byte) io.Reader {
	started := time.Now()
	lc, _ := lambdacontext.FromContext(ctx)
	inv := decodeInvocation(payload, lc, f.opts.limits)
	atClose := f.opts.hold != nil
	if inv.batch || inv.calls[0].stream == nil || inv.calls[0].err != nil {
		handed := false
		defer func() {
			if !handed {
				// A panic on the way out (the runtime reports it as a
				// function error): the rows queued are still written.
				f.answered(ctx, lc)
			}
		}()
		out, _ := f.answer(ctx, inv, lc, started)
		handed = true
		if f.opts.answered == nil || lc == nil {
			return bytes.NewBuffer(out) // as aws-lambda-go answers a lambda.Handler
		}
		return &answerReader{r: bytes.NewReader(out), end: func() { f.answered(ctx, lc) }, atClose: atClose}
	}
	pr, pw := io.Pipe()
	w := wire.NewStreamWriter(localTee(ctx, lc, pw, f.logf))
	inv.calls[0].frames = w
	go func() {
		var out []byte
		defer func() {
			if p := recover(); p != nil {
				// As the runtime reports a handler's panic: a function
				// error (here, the stream's error trailer), not a crash.
				pw.CloseWithError(fmt.Errorf("mcpfn: the invocation panicked: %v", p))
				return
			}
			pw.CloseWithError(w.Final(out))
		}()
		out, _ = f.answer(ctx, inv, lc, started)
	}()
	if f.opts.answered == nil || lc == nil {
		return ndjsonBody{r: pr}
	}
	return ndjsonBody{r: &answerReader{r: pr, end: func() { f.answered(ctx, lc) }, atClose: atClose}}
}

// Streaming is the function as Start serves it with aws-lambda-go: a handler
// returning an io.Reader, which the runtime streams (the Runtime API's
// chunked response; InvokeWithResponseStream and Function URLs in
// RESPONSE_STREAM mode relay it as it comes). Lambda accepts only JSON
// payloads (an empty one reaches the function as {}), so the runtime's
// JSON decoding of the payload changes nothing on AWS; a runtime that
// passes an empty payload through (the emulator) gets a function error.
func (f *Function) Streaming() func(context.Context, json.RawMessage) (io.Reader, error) {
	return func(ctx context.Context, payload json.RawMessage) (io.Reader, error) {
		return f.InvokeStream(ctx, payload), nil
	}
}

// ndjsonBody is a stream that tells the runtime its content type. It has no
// exported field: aws-lambda-go streams a reader whose JSON is "{}".
type ndjsonBody struct{ r io.Reader }

func (b ndjsonBody) Read(p []byte) (int, error) { return b.r.Read(p) }
func (ndjsonBody) ContentType() string          { return "application/x-ndjson" }

// Close closes the stream's reader (answerReader.Close), which the runtime
// does once it has posted it.
func (b ndjsonBody) Close() error {
	if c, ok := b.r.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// answer serves an invocation's calls and encodes their answer.
func (f *Function) answer(ctx context.Context, inv invocation, lc *lambdacontext.LambdaContext, started time.Time) ([]byte, error) {
	cold := !f.warmed.Swap(true) && processCold.Swap(false)

	if !inv.batch {
		out := f.encode(inv.calls[0], f.serve(ctx, inv.calls[0], 0, lc, cold, started))
		if out == nil {
			// A notification has no response; Lambda still needs a body.
			return []byte("null"), nil
		}
		return out, nil
	}
	// A batch's calls run concurrently, each in its own Call and context.
	resps := make([]json.RawMessage, len(inv.calls))
	var wg sync.WaitGroup
	for i, d := range inv.calls {
		wg.Go(func() {
			resps[i] = f.encode(d, f.serve(ctx, d, i, lc, cold && i == 0, started))
		})
	}
	wg.Wait()
	out := make([]json.RawMessage, 0, len(resps))
	for _, r := range resps {
		if r != nil {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		// A batch of notifications only has no response body.
		return []byte("null"), nil
	}
	return json.Marshal(out)
}

// processCold is true until the first invocation of this process.
var processCold atomic.Bool

func init() { processCold.Store(true) }

// response is one call's answer before it is put in the caller's format.
type response struct {
	result json.RawMessage // a CallToolResult (or a tools/list / initialize result)
	// resultRef: the result was stored (claim check); result is what was.
	resultRef *wire.ObjectRef
	rpcErr    *wire.RPCError
	callID    string
	// startTask: the tool asked to run the call as a task (task.go).
	startTask bool
}

// serve answers one decoded call.
func (f *Function) serve(ctx context.Context, d *decoded, index int, lc *lambdacontext.LambdaContext, cold bool, started time.Time) response {
	if d.source == SourceJSONRPC && d.err == nil && d.method != "tools/call" {
		return f.serveProtocol(d)
	}
	return f.runCall(ctx, d, index, lc, cold, started)
}

// serveProtocol answers the JSON-RPC methods that are not tool calls. They
// leave no audit row: nothing was called.
func (f *Function) serveProtocol(d *decoded) response {
	switch d.method {
	case "tools/list":
		l, err := f.tool.Listing()
		if err != nil {
			return response{rpcErr: &wire.RPCError{Code: wire.RPCInternalError, Message: err.Error()}}
		}
		b, _ := json.Marshal(map[string]any{"tools": []Listing{l}})
		return response{result: b}
	case "initialize":
		b, _ := json.Marshal(map[string]any{
			"protocolVersion": "2025-11-25",
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      map[string]any{"name": "mcpfn/" + f.tool.name, "version": "1"},
		})
		return response{result: b}
	case "ping":
		return response{result: json.RawMessage(`{}`)}
	}
	if d.isNotify {
		return response{}
	}
	return response{rpcErr: &wire.RPCError{Code: wire.RPCMethodNotFound, Message: "method not found: " + d.method +
		"; this function answers tools/call, tools/list, initialize and ping"}}
}

// encode puts a response in the caller's format. It returns nil for a
// JSON-RPC notification.
func (f *Function) encode(d *decoded, r response) json.RawMessage {
	var v any
	switch d.source {
	case SourceEnvelope:
		v = wire.EnvelopeResponse{Version: wire.EnvelopeVersion, CallID: r.callID, Result: r.result, Error: r.rpcErr, StartTask: r.startTask}
		if r.resultRef != nil {
			v = wire.EnvelopeResponse{Version: wire.EnvelopeVersion, CallID: r.callID, ResultRef: r.resultRef}
		}
	case SourceAgentCore:
		if r.rpcErr != nil {
			// AgentCore expects a CallToolResult; a protocol failure
			// becomes an error result.
			v = errorResult(NewError(CodeBadRequest, r.rpcErr.Message))
		} else {
			v = r.result
		}
	default: // JSON-RPC, and payloads in no format (answered as JSON-RPC)
		if d.isNotify && d.err == nil {
			return nil
		}
		v = wire.NewRPCResponse(d.rpcID, r.result, r.rpcErr)
	}
	b, err := json.Marshal(v)
	if err != nil {
		b = wire.RPCErrorJSON(nil, wire.RPCInternalError, "the result could not be encoded")
	}
	return b
}
