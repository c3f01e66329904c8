package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/smithy-go/transport/http/protocol/restjson1"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/wire"
)

// Progress and log notifications of a running call (docs/long-running.md).
//
// A tools/call whose client sent a progress token or a log level is
// answered on an SSE stream (the go-sdk handler with JSONResponse false,
// same server); every other message keeps its JSON response. The call is
// forwarded with InvokeWithResponseStream and the envelope's Stream set, so
// the function answers with NDJSON (wire/stream.go): its progress frames
// are relayed as notifications/progress with the request's token and its
// log frames as notifications/message (the go-sdk applies the requested
// level) as they arrive; the last line is the answer an Invoke would have
// had.

// StreamInvoker is the streaming part of the Lambda API. *lambda.Client
// implements it; an [Invoker] without it answers every call with JSON.
type StreamInvoker interface {
	InvokeWithResponseStream(ctx context.Context, in *lambda.InvokeWithResponseStreamInput, optFns ...func(*lambda.Options)) (*lambda.InvokeWithResponseStreamOutput, error)
}

// sseHandler is the go-sdk handler of the gateway's server with opts, but
// answering on SSE streams.
func (g *Gateway) sseHandler(opts mcp.StreamableHTTPOptions) http.Handler {
	opts.JSONResponse = false
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return g.server }, &opts)
}

// wantsStream reports whether msg is a tools/call asking for notifications
// (a progress token, a log level) that the gateway can relay.
func (g *Gateway) wantsStream(ri *requestInfo, msg []byte) bool {
	if ri.method != "tools/call" {
		return false
	}
	if _, ok := g.invoker.(StreamInvoker); !ok {
		return false
	}
	// Most calls ask for neither: skip decoding them a second time (a key
	// spelled with JSON escapes only goes without notifications).
	if !bytes.Contains(msg, []byte(`"progressToken"`)) && !bytes.Contains(msg, []byte(`logLevel"`)) {
		return false
	}
	var m struct {
		Params struct {
			Meta struct {
				ProgressToken json.RawMessage `json:"progressToken"`
				LogLevel      string          `json:"io.modelcontextprotocol/logLevel"`
			} `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(msg, &m) != nil {
		return false
	}
	t := m.Params.Meta.ProgressToken
	return (len(t) > 0 && string(t) != "null") || m.Params.Meta.LogLevel != ""
}

// relay carries one streamed call's frames to its client.
type relay struct {
	session *mcp.ServerSession
	token   any // the request's progress token; nil: none
	request *wire.StreamRequest
}

// relayFor returns the relay of a call served on an SSE stream, or nil.
func (g *Gateway) relayFor(ctx context.Context, ri *requestInfo, req *mcp.CallToolRequest) *relay {
	if !ri.sse || req.Session == nil {
		return nil
	}
	rl := &relay{session: req.Session, token: req.Params.GetProgressToken(), request: &wire.StreamRequest{}}
	rl.request.Progress = rl.token != nil
	//lint:ignore SA1019 logging is deprecated in 2026-07-28 but still part of every era the gateway serves
	if lvl, ok := req.Params.Meta[mcp.MetaKeyLogLevel].(string); ok {
		rl.request.LogLevel = lvl
	}
	if !rl.request.Progress && rl.request.LogLevel == "" {
		return nil
	}
	return rl
}

// send relays one frame; frames the client did not ask for are dropped.
// A client gone away is no reason to stop the call.
func (rl *relay) send(ctx context.Context, fr *wire.Frame) {
	switch fr.Kind {
	case wire.FrameProgress:
		if rl.token == nil || fr.Progress == nil {
			return
		}
		p := &mcp.ProgressNotificationParams{ProgressToken: rl.token, Progress: *fr.Progress, Message: fr.Message}
		if fr.Total != nil {
			p.Total = *fr.Total
		}
		_ = rl.session.NotifyProgress(ctx, p)
	case wire.FrameLog:
		var data any = fr.Data
		if len(fr.Data) == 0 {
			data = nil
		}
		//lint:ignore SA1019 logging is deprecated in 2026-07-28 but still part of every era the gateway serves
		_ = rl.session.Log(ctx, &mcp.LoggingMessageParams{Level: mcp.LoggingLevel(fr.Level), Logger: fr.Logger, Data: data})
	}
}

// invokeStream is invoke's call of the function with
// InvokeWithResponseStream, relaying frames while the call runs.
func (f *forward) invokeStream(ctx context.Context, payload []byte, traceHeader string) (*mcp.CallToolResult, *jsonrpc.Error) {
	out, err := f.g.invoker.(StreamInvoker).InvokeWithResponseStream(ctx, &lambda.InvokeWithResponseStreamInput{
		FunctionName:   &f.function,
		Payload:        payload,
		InvocationType: types.ResponseStreamingInvocationTypeRequestResponse,
	}, append(f.invokeOptions(traceHeader), ownEventStreamCodec)...)
	if err != nil {
		return f.unanswered(ctx, err), nil
	}
	f.requestID, _ = awsmiddleware.GetRequestIDMetadata(out.ResultMetadata)
	// From here on the function has the call.
	f.delivery = maybeRun
	stream := out.GetStream()
	defer stream.Close()
	final, complete, err := f.relay.read(ctx, stream.Events(), stream.Err)
	if complete != nil && complete.ErrorCode != nil && *complete.ErrorCode != "" {
		// A function error (crash, timeout, runtime error) ends the
		// stream as Invoke's X-Amz-Function-Error ends an answer.
		b, _ := json.Marshal(map[string]string{"errorType": *complete.ErrorCode, "errorMessage": deref(complete.ErrorDetails)})
		return f.functionError("Unhandled", b), nil
	}
	if err != nil || final == nil {
		if err == nil {
			err = errors.New("the stream ended without the function's answer")
		}
		if ctx.Err() != nil {
			return f.invokeError(ctx, ctx.Err()), nil
		}
		f.fault = true
		return f.failure(adapter.CodeUnavailable, "the tool's answer was cut off; retry later", true,
			fmt.Errorf("function %s: streamed answer: %w", f.function, err)), nil
	}
	// The function answered in full (its last line, InvokeComplete
	// without an error): it wrote its own row, as for an Invoke's answer,
	// and the gateway writes none.
	f.delivery = answered
	return f.decodeAnswer(final)
}

// ownEventStreamCodec gives one streamed Invoke a protocol of its own. The
// SDK's client keeps one event stream codec for all its streams, whose
// scratch state each stream's reader writes without a lock
// (aws/smithy-go#714, open in smithy-go v1.28.9): concurrent streamed calls
// race on it. restjson1.New ignores its schema argument.
func ownEventStreamCodec(o *lambda.Options) { o.Protocol = restjson1.New(nil) }

// read reads a streamed answer from its events, relaying frames as they
// come: the final payload, the InvokeComplete event, and what broke the
// stream if anything did.
func (rl *relay) read(ctx context.Context, events <-chan types.InvokeWithResponseStreamResponseEvent, streamErr func() error) (json.RawMessage, *types.InvokeWithResponseStreamCompleteEvent, error) {
	pr, pw := io.Pipe()
	var complete *types.InvokeWithResponseStreamCompleteEvent
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range events {
			switch v := ev.(type) {
			case *types.InvokeWithResponseStreamResponseEventMemberPayloadChunk:
				// After the reader stopped the write fails at once; the
				// events are drained all the same.
				_, _ = pw.Write(v.Value.Payload)
			case *types.InvokeWithResponseStreamResponseEventMemberInvokeComplete:
				c := v.Value
				complete = &c
			}
		}
		pw.CloseWithError(streamErr())
	}()
	var final json.RawMessage
	var err error
	sr := wire.NewStreamReader(pr)
	for {
		fr, line, rerr := sr.Next()
		if rerr != nil {
			if rerr != io.EOF {
				err = rerr
			}
			break
		}
		if fr != nil {
			rl.send(ctx, fr)
			continue
		}
		final = line
	}
	pr.CloseWithError(errors.New("gateway: the stream's reader stopped"))
	<-done
	if complete == nil && err == nil {
		err = errors.New("the stream ended without InvokeComplete")
	}
	return final, complete, err
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
