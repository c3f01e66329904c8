package localtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/calltoken"
	"github.com/mcpfn/mcpfn/localtest"
	"github.com/mcpfn/mcpfn/localtest/internal/progress"
	"github.com/mcpfn/mcpfn/wire"
)

const (
	progressFunction   = "ProgressFunction"
	asyncProbeFunction = "AsyncProbeFunction"
)

// streamStack starts a small stack of the progress and async fixtures,
// next to the shared one (on its DynamoDB). A failed async run is retried
// after 20 ms, a second time only after an hour (never, in a test).
func streamStack(t *testing.T) (*localtest.Stack, string) {
	t.Helper()
	dir := t.TempDir()
	cfg := testConfig(dir)
	cfg.DynamoDBEndpoint = stack.DynamoDBEndpoint()
	cfg.PoolSize = 1
	cfg.Functions = []localtest.FunctionSpec{}
	cfg.ExtraFunctions = []localtest.FunctionSpec{
		{Name: progressFunction, Package: "./localtest/internal/progress/function", Tool: progress.Name},
		{Name: asyncProbeFunction, Package: "./localtest/internal/asyncprobe", MaxConcurrency: 1,
			EventInvoke: &localtest.EventInvokeConfig{MaximumRetryAttempts: 2, MaximumEventAge: time.Hour}},
	}
	cfg.ExtraTools = []*adapter.Tool{progress.Tool()}
	cfg.AsyncRetryDelays = []time.Duration{20 * time.Millisecond, time.Hour}
	st, err := localtest.Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st, dir
}

func lambdaClientOf(st *localtest.Stack) *lambda.Client {
	return lambda.New(lambda.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(st.InvokeURL()),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
	})
}

// release sends SIGUSR1 to the process a "pid=N" progress message names.
func release(t *testing.T, message string) {
	pid, err := strconv.Atoi(strings.TrimPrefix(message, progress.PIDPrefix))
	if err != nil {
		t.Errorf("first progress message %q names no pid", message)
		return
	}
	if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil {
		t.Errorf("releasing the handler (pid %d): %v", pid, err)
	}
}

// TestLocalStreaming checks InvokeWithResponseStream on the local stack:
// frames reach the caller while the handler runs (the handler waits for a
// signal the test sends only once it has read the first frame), the bytes
// are the function's stream, and an MCP client through the gateway gets
// its progress notifications the same way.
func TestLocalStreaming(t *testing.T) {
	st, dir := streamStack(t)

	t.Run("InvokeWithResponseStream", func(t *testing.T) {
		keys, err := localtest.LoadKeys(dir)
		if err != nil {
			t.Fatal(err)
		}
		env, _ := json.Marshal(wire.Envelope{
			Version: wire.EnvelopeVersion, CallID: wire.NewCallID(),
			Params: wire.EnvelopeParams{Name: progress.Name, Arguments: json.RawMessage(`{"wait":true}`)},
			MCP:    wire.EnvelopeMCP{Era: wire.EraOf("2026-07-28"), Method: "tools/call", ProtocolVersion: "2026-07-28"},
			Stream: &wire.StreamRequest{Progress: true},
		})
		signed, err := keys.SignEnvelope(env, &calltoken.Identity{Subject: localtest.DemoSubject, AuthMethod: "jwt", Issuer: st.Issuer()}, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		out, err := lambdaClientOf(st).InvokeWithResponseStream(ctx, &lambda.InvokeWithResponseStreamInput{
			FunctionName: aws.String(progressFunction), Payload: signed,
		})
		if err != nil {
			t.Fatal(err)
		}
		stream := out.GetStream()
		defer stream.Close()
		var buf bytes.Buffer
		var lines []string
		var complete *types.InvokeWithResponseStreamCompleteEvent
		for ev := range stream.Events() {
			switch v := ev.(type) {
			case *types.InvokeWithResponseStreamResponseEventMemberPayloadChunk:
				buf.Write(v.Value.Payload)
				for {
					line, err := buf.ReadString('\n')
					if err != nil {
						buf.WriteString(line)
						break
					}
					lines = append(lines, strings.TrimSpace(line))
					if len(lines) == 1 {
						var f wire.Frame
						_ = json.Unmarshal([]byte(lines[0]), &f)
						release(t, f.Message)
					}
				}
			case *types.InvokeWithResponseStreamResponseEventMemberInvokeComplete:
				complete = &v.Value
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if complete == nil || aws.ToString(complete.ErrorCode) != "" {
			t.Fatalf("InvokeComplete %+v, want one without an error", complete)
		}
		if len(lines) != 3 || !strings.Contains(lines[1], `"released"`) || !strings.Contains(lines[2], `"released":true`) {
			t.Fatalf("stream lines %q, want the pid frame, the released frame, the answer", lines)
		}
	})

	t.Run("gateway relays progress", func(t *testing.T) {
		var mu sync.Mutex
		var got []string
		client := mcp.NewClient(&mcp.Implementation{Name: "progress-e2e", Version: "1"}, &mcp.ClientOptions{
			ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
				mu.Lock()
				got = append(got, req.Params.Message)
				first := len(got) == 1
				mu.Unlock()
				if first {
					release(t, req.Params.Message)
				}
			},
		})
		cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: st.MCPURL(), HTTPClient: &http.Client{Transport: bearer{st.Token()}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		params := &mcp.CallToolParams{Name: progress.Name, Arguments: map[string]any{"wait": true}}
		params.SetProgressToken("p-1")
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		if res.IsError {
			t.Fatalf("tool error: %s", text(res))
		}
		mu.Lock()
		defer mu.Unlock()
		if len(got) == 0 || !strings.HasPrefix(got[0], progress.PIDPrefix) {
			t.Fatalf("progress %q, want the pid frame first", got)
		}
	})
}

// probe is the async fixture's notify endpoint: it records each attempt's
// request id and answers with the next of answers ("fail" or "ok").
type probe struct {
	*httptest.Server
	attempts chan string
	mu       sync.Mutex
	answers  []string
}

func newProbe(t *testing.T, answers ...string) *probe {
	p := &probe{attempts: make(chan string, 10), answers: answers}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _ := io.ReadAll(r.Body)
		p.mu.Lock()
		a := "ok"
		if len(p.answers) > 0 {
			a, p.answers = p.answers[0], p.answers[1:]
		}
		p.mu.Unlock()
		_, _ = io.WriteString(w, a)
		p.attempts <- string(id)
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *probe) next(t *testing.T) string {
	t.Helper()
	select {
	case id := <-p.attempts:
		return id
	case <-time.After(30 * time.Second):
		t.Fatal("no attempt of the async invoke")
		return ""
	}
}

// TestLocalEventInvoke checks InvocationType Event on the local stack: 202
// at once, the run on the function's pool, a function error retried with
// the same request id, and Stack.Close dropping a retry still waiting.
func TestLocalEventInvoke(t *testing.T) {
	st, _ := streamStack(t)
	client := lambdaClientOf(st)
	invoke := func(p *probe) {
		t.Helper()
		out, err := client.Invoke(t.Context(), &lambda.InvokeInput{
			FunctionName: aws.String(asyncProbeFunction), InvocationType: types.InvocationTypeEvent,
			Payload: []byte(`{"notify":"` + p.URL + `"}`),
		})
		if err != nil {
			t.Fatal(err)
		}
		if out.StatusCode != http.StatusAccepted {
			t.Fatalf("status %d, want 202", out.StatusCode)
		}
	}

	t.Run("a function error is retried", func(t *testing.T) {
		p := newProbe(t, "fail", "ok")
		invoke(p)
		first, second := p.next(t), p.next(t)
		if first == "" || first != second {
			t.Fatalf("attempts %q and %q, want the same request id", first, second)
		}
	})

	t.Run("Close drops a pending retry", func(t *testing.T) {
		p := newProbe(t, "fail", "fail", "fail")
		invoke(p)
		p.next(t)
		p.next(t) // the second attempt failed: the third waits an hour
		closed := make(chan error, 1)
		go func() { closed <- st.Close() }()
		select {
		case <-closed:
		case <-time.After(30 * time.Second):
			t.Fatal("Close waited for the pending retry")
		}
		select {
		case id := <-p.attempts:
			t.Fatalf("a third attempt ran after Close: %s", id)
		default:
		}
	})
}

// rpc posts one 2026-07-28 request to the stack's gateway with the tasks
// extension declared, as the conformance suite does, and returns its
// result.
func rpc(t *testing.T, st *localtest.Stack, method string, params map[string]any) map[string]any {
	t.Helper()
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "task-e2e", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}},
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, st.MCPURL(), bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+st.Token())
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	for _, k := range []string{"name", "taskId"} {
		if n, ok := params[k].(string); ok {
			req.Header.Set("Mcp-Name", n)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a struct {
		Result map[string]any
		Error  map[string]any
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &a); err != nil || a.Result == nil {
		t.Fatalf("%s: HTTP %d %s", method, resp.StatusCode, b)
	}
	return a.Result
}

// TestLocalTaskRunsAsEvent: a task-augmented call through the local
// gateway becomes a task whose run is an asynchronous invoke on the local
// Invoke API (202, the function's pool), recorded in the template's
// TasksTable on DynamoDB Local, and tasks/get reads its result.
func TestLocalTaskRunsAsEvent(t *testing.T) {
	st, _ := streamStack(t)
	before := st.Invocations(progressFunction)
	created := rpc(t, st, "tools/call", map[string]any{"name": progress.Name, "arguments": map[string]any{}})
	id, _ := created["taskId"].(string)
	if created["resultType"] != "task" || id == "" {
		t.Fatalf("created %v, want a task", created)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		v := rpc(t, st, "tasks/get", map[string]any{"taskId": id})
		if v["status"] == "completed" {
			res, _ := json.Marshal(v["result"])
			if !strings.Contains(string(res), `"released":false`) {
				t.Fatalf("task result %s", res)
			}
			break
		}
		if v["status"] != "working" || time.Now().After(deadline) {
			t.Fatalf("task %v", v)
		}
		time.Sleep(100 * time.Millisecond) // the task's poll interval is the client's to honour
	}
	if n := st.Invocations(progressFunction) - before; n != 1 {
		t.Fatalf("%d invokes of the function, want the one asynchronous run", n)
	}
}
