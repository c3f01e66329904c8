package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// caller makes one call and checks its answer: seq makes each call's text
// its own, so an answer cannot be mistaken for another's.
type caller interface {
	call(ctx context.Context, seq int64) error
}

func echoText(seq int64) string { return "echo " + strconv.FormatInt(seq, 10) }

// mcpCaller is one MCP client: a go-sdk client session over Streamable
// HTTP with an HTTP transport (and so connections) of its own.
type mcpCaller struct {
	cs *mcp.ClientSession
}

// bearer adds the Authorization header a client of mcpfn's gateway sends.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// connect opens a client session to url; token "" sends no Authorization
// (the bare forwarder has no auth). The standalone SSE stream is off: a
// stateless server answers its GET with 405, and neither gateway sends
// anything on it.
func connect(ctx context.Context, url, token string) (*mcpCaller, error) {
	var rt http.RoundTripper = http.DefaultTransport.(*http.Transport).Clone()
	if token != "" {
		rt = bearer{token: token, base: rt}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "bench-gateway", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: url, HTTPClient: &http.Client{Transport: rt, Timeout: time.Minute},
		DisableStandaloneSSE: true, MaxRetries: -1,
	}, nil)
	if err != nil {
		return nil, err
	}
	return &mcpCaller{cs: cs}, nil
}

func (c *mcpCaller) call(ctx context.Context, seq int64) error {
	text := echoText(seq)
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: echoTool, Arguments: map[string]any{"text": text}})
	if err != nil {
		return err
	}
	if res.IsError || len(res.Content) != 1 {
		return fmt.Errorf("the call answered %s", resultText(res))
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != text {
		return fmt.Errorf("the call answered %s, want %q", resultText(res), text)
	}
	return nil
}

func (c *mcpCaller) close() { _ = c.cs.Close() }

func resultText(res *mcp.CallToolResult) string {
	b, _ := json.Marshal(res)
	return fmt.Sprintf("%.300s", b)
}

// directCaller invokes the function itself, with the payload the bare
// forwarder sends (the MCP call's params): the round trip no gateway can
// go below.
type directCaller struct {
	client *lambda.Client
}

func (c directCaller) call(ctx context.Context, seq int64) error {
	text := echoText(seq)
	payload, _ := json.Marshal(map[string]any{"name": echoTool, "arguments": map[string]string{"text": text}})
	fn := echoFn
	out, err := c.client.Invoke(ctx, &lambda.InvokeInput{FunctionName: &fn, Payload: payload})
	if err != nil {
		return err
	}
	var answer struct {
		Result struct {
			Content []struct{ Text string } `json:"content"`
		} `json:"result"`
	}
	if out.FunctionError != nil || json.Unmarshal(out.Payload, &answer) != nil ||
		len(answer.Result.Content) != 1 || answer.Result.Content[0].Text != text {
		return fmt.Errorf("the function answered %.300s", out.Payload)
	}
	return nil
}

// block runs n calls over callers, each caller making one call at a time
// (a closed loop: as many calls in flight as callers), and returns every
// call's duration and the block's wall time. The first failure ends it.
func block(ctx context.Context, callers []caller, n int, seq *atomic.Int64) ([]time.Duration, time.Duration, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	lats := make([][]time.Duration, len(callers))
	var wg sync.WaitGroup
	start := time.Now()
	for i, c := range callers {
		wg.Go(func() {
			for next.Add(1) <= int64(n) && ctx.Err() == nil {
				s := seq.Add(1)
				t := time.Now()
				if err := c.call(ctx, s); err != nil {
					cancel(err)
					return
				}
				lats[i] = append(lats[i], time.Since(t))
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	if err := context.Cause(ctx); err != nil {
		return nil, 0, err
	}
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	return all, wall, nil
}
