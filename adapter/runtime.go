package adapter

import (
	"context"
	"encoding/json"
	"io"
	"sync/atomic"

	"github.com/aws/aws-lambda-go/lambda"
)

// runtimeHandler is this process's aws-lambda-go handler, built before the
// function it serves: building it registers the SIGTERM extension
// (WithEnableSIGTERM), a request to the Extensions API that Start makes
// while the call keys are fetched rather than after. Lambda sends SIGTERM
// before shutting an environment down to a process that registered one
// (subscribed to no event: it costs an invoke nothing); the handler that
// runs then is the one serve hands it.
type runtimeHandler struct {
	ready    chan struct{} // closed once h is built and the extension registered
	h        lambda.Handler
	handle   atomic.Pointer[streamingHandler] // the served Function's Streaming
	shutdown atomic.Pointer[func()]
}

// streamingHandler is [Function.Streaming]'s handler.
type streamingHandler = func(context.Context, json.RawMessage) (io.Reader, error)

// startRuntime builds the handler in the background.
func startRuntime() *runtimeHandler {
	r := &runtimeHandler{ready: make(chan struct{})}
	go func() {
		defer close(r.ready)
		r.h = lambda.NewHandlerWithOptions(r.invoke, lambda.WithEnableSIGTERM(r.sigterm))
	}()
	return r
}

// invoke is the handler aws-lambda-go calls: the served Function's
// Streaming.
func (r *runtimeHandler) invoke(ctx context.Context, payload json.RawMessage) (io.Reader, error) {
	return (*r.handle.Load())(ctx, payload)
}

// sigterm runs serve's shutdown; before serve (a SIGTERM during the rest of
// the start) there is nothing to drain or tear down.
func (r *runtimeHandler) sigterm() {
	if s := r.shutdown.Load(); s != nil {
		(*s)()
	}
}

// serve runs fn as this process's Lambda function, shutdown on SIGTERM. It
// never returns.
func (r *runtimeHandler) serve(fn *Function, shutdown func()) {
	h := fn.Streaming()
	r.handle.Store(&h)
	r.shutdown.Store(&shutdown)
	<-r.ready
	lambda.StartWithOptions(r.h)
}
