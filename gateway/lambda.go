package gateway

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdaurl"
)

// FunctionURLHandler returns the Lambda handler for a Function URL in
// RESPONSE_STREAM mode (aws-lambda-go's lambdaurl): the response is
// streamed as the gateway writes it, so an SSE answer's progress
// notifications reach the client while the call runs (stream.go). The
// event's request context, with an AWS_IAM Function URL's principal, is
// read through lambdaurl.RequestFromContext. It is the gateway's only Lambda
// entry point: behind anything else (an HTTP API), wrap the Gateway, an
// http.Handler, in a bridge of your own, with JWT auth
// (docs/decisions/0026).
func (g *Gateway) FunctionURLHandler() func(context.Context, *events.LambdaFunctionURLRequest) (*events.LambdaFunctionURLStreamingResponse, error) {
	return lambdaurl.Wrap(g)
}

// StartLambda serves g as a Lambda function behind a RESPONSE_STREAM
// Function URL (template.yaml); it does not return.
func StartLambda(g *Gateway) {
	lambda.Start(g.FunctionURLHandler())
}

// ListenAndServe serves g over plain HTTP on addr (local use; "" means
// MCPFN_LISTEN_ADDR or 127.0.0.1:8080) until SIGINT or SIGTERM.
func (g *Gateway) ListenAndServe(addr string) error {
	if addr == "" {
		addr = os.Getenv(EnvListenAddr)
	}
	if addr == "" {
		addr = defaultListenAddr
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return g.Serve(ctx, ln)
}

// Serve serves g on ln until ctx ends, then shuts down gracefully.
func (g *Gateway) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           g,
		ReadHeaderTimeout: 10 * time.Second,
		// Long enough for the slowest forwarded call plus its answer.
		WriteTimeout: g.cfg.InvokeTimeout + 10*time.Second,
		IdleTimeout:  2 * time.Minute,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), g.cfg.InvokeTimeout)
		defer cancel()
		err := srv.Shutdown(sctx)
		if e := <-errc; !errors.Is(e, http.ErrServerClosed) && err == nil {
			err = e
		}
		return err
	}
}

// IsLambda reports whether the process runs in a Lambda execution
// environment (the Runtime API is set).
func IsLambda() bool { return os.Getenv("AWS_LAMBDA_RUNTIME_API") != "" }
