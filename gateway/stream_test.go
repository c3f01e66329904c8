package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/internal/invokestream"
	"github.com/mcpfn/mcpfn/internal/lambdatest"
	"github.com/mcpfn/mcpfn/wire"
)

// invokeStream serves InvokeWithResponseStream as Lambda does: the
// function's streamed answer (adapter.Function.InvokeStream) relayed chunk
// by chunk as an event stream, then InvokeComplete.
func (api *invokeAPI) invokeStream(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	api.mu.Lock()
	fn := api.functions[name]
	api.invokes[name]++
	api.headers = append(api.headers, r.Header.Clone())
	api.mu.Unlock()
	reqID := wire.NewCallID()
	w.Header().Set("X-Amzn-RequestId", reqID)
	payload, _ := io.ReadAll(r.Body)
	if fn == nil {
		w.Header().Set("X-Amzn-ErrorType", "ResourceNotFoundException")
		w.WriteHeader(http.StatusNotFound)
		return
	}
	ctx, cancel := lambdatest.Context(r.Context(), lambdatest.Invocation{
		RequestID: reqID, FunctionARN: "arn:aws:lambda:us-east-1:123456789012:function:" + name,
		Trace: r.Header.Get("X-Amzn-Trace-Id"), Timeout: 10 * time.Second,
	})
	defer cancel()
	body := fn.InvokeStream(ctx, payload)
	sw := invokestream.Start(w)
	buf := make([]byte, 64<<10)
	for {
		n, err := body.Read(buf)
		_ = sw.Chunk(buf[:n])
		if err != nil {
			code := ""
			if err != io.EOF {
				code = "Runtime.Error"
			}
			_ = sw.Complete(code, "")
			return
		}
	}
}

type waitIn struct {
	Wait bool `json:"wait,omitempty"`
}

type waitOut struct {
	Released bool `json:"released"`
}

// streamTool reports progress, logs at two levels and, asked to, waits for
// release between its two progress reports.
func streamTool(release <-chan struct{}) *adapter.Tool {
	return adapter.MustDefine(adapter.ToolDef[waitIn, waitOut]{
		Name: "progress_wait", Description: "Reports progress around a wait.", ReadOnly: true,
		Handler: func(ctx context.Context, call *adapter.Call, in waitIn) (waitOut, error) {
			call.Progress(1, 2, "started")
			call.Log("debug", "quiet detail")
			call.Log("warning", map[string]string{"note": "loud"})
			if in.Wait {
				select {
				case <-release:
				case <-ctx.Done():
					return waitOut{}, ctx.Err()
				case <-time.After(8 * time.Second):
					return waitOut{}, adapter.Errorf(adapter.CodeTimeout, "never released: the first progress frame did not reach the client while the handler ran")
				}
			}
			call.Progress(2, 2, "done")
			return waitOut{Released: in.Wait}, nil
		},
	})
}

// newStreamEnv is newEnv with the progress_wait tool and its function
// (fn-progress).
func newStreamEnv(t *testing.T, release <-chan struct{}, opts ...envOption) *env {
	tool := streamTool(release)
	return newEnv(t, append([]envOption{func(c *Config) {
		c.Tools = append(c.Tools, tool)
		c.Functions["progress_wait"] = "fn-progress"
	}}, opts...)...)
}

// The first progress frame reaches the go-sdk client while the handler is
// still blocked — the handler waits for the client's handler to release
// it — so frames are relayed as they happen, not with the result.
func TestProgressReachesClientWhileHandlerRuns(t *testing.T) {
	release := make(chan struct{})
	e := newStreamEnv(t, release)
	var mu sync.Mutex
	var got []string
	var once sync.Once
	client := mcp.NewClient(&mcp.Implementation{Name: "progress-client", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			got = append(got, req.Params.Message+":"+toString(req.Params.ProgressToken))
			mu.Unlock()
			once.Do(func() { close(release) })
		},
	})
	tok := e.iss.token(t, "alice", nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint:   e.mcpURL,
		HTTPClient: &http.Client{Transport: headerTransport{base: http.DefaultTransport, header: bearer(tok)}},
		MaxRetries: -1,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	params := &mcp.CallToolParams{Name: "progress_wait", Arguments: waitIn{Wait: true}}
	params.SetProgressToken("tok-1")
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("tool error: %s", textOf(res))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) == 0 || got[0] != "started:tok-1" {
		t.Fatalf("progress notifications %v, want started:tok-1 first", got)
	}
}

func toString(v any) string { s, _ := v.(string); return s }

// sseMessages reads an SSE response's JSON-RPC messages in order.
func sseMessages(t *testing.T, r io.Reader) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("SSE data %q: %v", data, err)
		}
		out = append(out, m)
	}
	return out
}

// On the wire the frames come before the result, in the order the handler
// made them, and only the log messages at or above the requested level.
func TestStreamedCallOrderOnTheWire(t *testing.T) {
	e := newStreamEnv(t, nil)
	tok := e.iss.token(t, "alice", nil)
	call := `{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"progress_wait","arguments":{},` +
		`"_meta":{"progressToken":7,"io.modelcontextprotocol/logLevel":"warning","io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
	h := bearer(tok)
	h.Set("Mcp-Protocol-Version", "2026-07-28")
	h.Set("Mcp-Method", "tools/call")
	h.Set("Mcp-Name", "progress_wait")
	resp, body := e.post(t, call, h)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("Content-Type %q, want an SSE stream: %s", ct, body)
	}
	msgs := sseMessages(t, strings.NewReader(string(body)))
	var seq []string
	for _, m := range msgs {
		switch m["method"] {
		case "notifications/progress":
			p := m["params"].(map[string]any)
			if p["progressToken"] != float64(7) {
				t.Errorf("progress token %v, want 7", p["progressToken"])
			}
			seq = append(seq, "progress:"+p["message"].(string))
		case "notifications/message":
			p := m["params"].(map[string]any)
			seq = append(seq, "log:"+p["level"].(string))
		default:
			if m["result"] != nil {
				seq = append(seq, "result")
			} else {
				seq = append(seq, "other")
			}
		}
	}
	want := "progress:started log:warning progress:done result"
	if strings.Join(seq, " ") != want {
		t.Fatalf("SSE messages %v, want %s", seq, want)
	}
}

// A call without a progress token or log level keeps its JSON response and
// its plain Invoke.
func TestPlainCallKeepsJSON(t *testing.T) {
	e := newStreamEnv(t, nil)
	tok := e.iss.token(t, "alice", nil)
	resp, body := e.post(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"progress_wait","arguments":{}}}`, bearer(tok))
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type %q, want JSON: %s", ct, body)
	}
	if !strings.Contains(string(body), `"result"`) {
		t.Fatalf("no result: %s", body)
	}
}

// functionURLRequest is a RESPONSE_STREAM Function URL event (lambdaurl)
// for one MCP POST of the 2026-07-28 era, signed by principal.
func functionURLRequest(tool, args, meta string, principal *events.LambdaFunctionURLRequestContextAuthorizerIAMDescription) *events.LambdaFunctionURLRequest {
	body := `{"jsonrpc":"2.0","id":"u1","method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `,` +
		`"_meta":{` + meta + `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"agent-x","version":"2"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
	return functionURLEvent(body, principal, map[string]string{
		"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": tool,
	})
}

// On Lambda the gateway streams through a RESPONSE_STREAM Function URL: the
// IAM principal comes from lambdaurl's request context, and the first
// progress event is readable from the response body while the handler
// still waits for the test to release it.
func TestFunctionURLStreamsWithIAM(t *testing.T) {
	release := make(chan struct{})
	e := newStreamEnv(t, release, func(c *Config) {
		c.Auth = AuthIAM
		c.AllowedHosts = []string{"abc123.lambda-url.us-east-1.on.aws"}
	})
	handler := e.gw.FunctionURLHandler()
	principal := &events.LambdaFunctionURLRequestContextAuthorizerIAMDescription{
		AccountID: "123456789012", CallerID: "AROAEXAMPLE:agent", UserID: "AROAEXAMPLE:agent",
		UserARN: "arn:aws:sts::123456789012:assumed-role/agent/agent",
	}
	ctx, cancel := lambdaContext("Root="+newTraceRoot()+";Parent=1111111111111111;Sampled=1", 20*time.Second)
	defer cancel()

	resp, err := handler(ctx, functionURLRequest("echo_call", `{"entityId":"e-1"}`, "", principal))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	var rpc struct{ Result mcp.CallToolResult }
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &rpc) != nil {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	if f := factsFrom(t, &rpc.Result); f.Subject != "arn:aws:sts::123456789012:assumed-role/agent" || f.AuthMethod != "iam" || f.Tenant != "123456789012" {
		t.Errorf("identity %+v", f)
	}
	if resp, _ := handler(ctx, functionURLRequest("echo_call", `{"entityId":"e-1"}`, "", nil)); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no principal: status %d", resp.StatusCode)
	}

	resp, err = handler(ctx, functionURLRequest("progress_wait", `{"wait":true}`, `"progressToken":"u-tok",`, principal))
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Headers["Content-Type"]; !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("Content-Type %q, want an SSE stream", ct)
	}
	var seq []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var m struct {
			Method string
			Params struct{ Message string }
			Result *mcp.CallToolResult
		}
		_ = json.Unmarshal([]byte(data), &m)
		switch {
		case m.Method == "notifications/progress":
			seq = append(seq, m.Params.Message)
			if m.Params.Message == "started" {
				close(release) // only now may the handler go on
			}
		case m.Result != nil:
			seq = append(seq, "result:"+textOf(m.Result))
		}
	}
	if got := strings.Join(seq, " "); got != `started done result:{"released":true}` {
		t.Fatalf("stream %q", got)
	}
}

// Concurrent streamed calls each get their own answer, and share nothing
// the race detector can see: the SDK client's one event stream codec is
// written by every stream's reader (aws/smithy-go#714), so each streamed
// Invoke gets a codec of its own.
func TestConcurrentStreamedCallsEachGetTheirOwnAnswer(t *testing.T) {
	e := newStreamEnv(t, nil)
	cs := e.mustConnect(t, "streaming-client", "", bearer(e.iss.token(t, "alice", nil)))
	const n = 8
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			entity := fmt.Sprintf("e-%d", i)
			params := &mcp.CallToolParams{Name: "echo_call", Arguments: map[string]any{"entityId": entity}}
			params.SetProgressToken(entity)
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			res, err := cs.CallTool(ctx, params)
			if err != nil {
				t.Errorf("call %d: %v", i, err)
				return
			}
			if res.IsError {
				t.Errorf("call %d: %s", i, textOf(res))
				return
			}
			var f facts
			b, _ := json.Marshal(res.StructuredContent)
			if err := json.Unmarshal(b, &f); err != nil || f.EntityID != entity {
				t.Errorf("call %d: answered %s, want entity %s", i, b, entity)
			}
		})
	}
	wg.Wait()
}
