// Command forwarder is the anchor `make bench-gateway` measures mcpfn's
// gateway against: what a user would otherwise deploy in front of a Lambda
// function — a bare go-sdk Streamable HTTP server with no auth and no
// audit, whose one tool forwards each tools/call to the function with
// lambda:Invoke (the AWS SDK for Go v2's client, its defaults) and answers
// the result the function returns.
//
// It is served as the gateway serves (stateless, JSON responses: what a
// server behind Lambda's Function URL must be), so the two differ only in
// what mcpfn adds. Environment: FORWARD_FUNCTION (the function's name),
// LISTEN_ADDR (host:port) and the AWS SDK's own variables (region,
// credentials, AWS_ENDPOINT_URL_LAMBDA). SIGTERM or SIGINT stops it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// inputSchema is the echo tool's, written out as a user would.
const inputSchema = `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	function, addr := os.Getenv("FORWARD_FUNCTION"), os.Getenv("LISTEN_ADDR")
	if function == "" || addr == "" {
		log.Fatal("forwarder: FORWARD_FUNCTION and LISTEN_ADDR are required")
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	invoker := lambda.NewFromConfig(cfg)

	server := mcp.NewServer(&mcp.Implementation{Name: "bare-forwarder", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "echo", Description: "Echoes its text.", InputSchema: json.RawMessage(inputSchema)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			payload, err := json.Marshal(req.Params)
			if err != nil {
				return nil, err
			}
			out, err := invoker.Invoke(ctx, &lambda.InvokeInput{FunctionName: &function, Payload: payload})
			if err != nil {
				return nil, err
			}
			if out.FunctionError != nil {
				return nil, fmt.Errorf("function error %s: %s", *out.FunctionError, out.Payload)
			}
			var answer struct {
				Result *mcp.CallToolResult `json:"result"`
			}
			if err := json.Unmarshal(out.Payload, &answer); err != nil || answer.Result == nil {
				return nil, fmt.Errorf("the function answered %.200s", out.Payload)
			}
			return answer.Result, nil
		})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	srv := &http.Server{Addr: addr, Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}
