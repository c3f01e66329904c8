package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/gateway"
)

// The operations of the mix. Each is one kind of call a client makes.
const (
	opGet          = "get"           // broadcast_get of a live broadcast
	opList         = "list"          // broadcast_list of the client's channel
	opCreate       = "create"        // broadcast_create
	opDelete       = "delete"        // broadcast_delete (destructive) of the oldest live one
	opDigest       = "digest"        // broadcast_digest with a progress token (SSE)
	opTask         = "task"          // broadcast_digest as a task, polled to its end
	opBadArgs      = "bad-args"      // broadcast_get with an id its schema refuses: VALIDATION_ERROR
	opBadGone      = "bad-gone"      // broadcast_get of a deleted broadcast: NOT_FOUND
	opBadScope     = "bad-scope"     // broadcast_delete with a token without its scope: FORBIDDEN
	opBadTool      = "bad-tool"      // a tool that does not exist: a JSON-RPC error, no call
	opTaskPoll     = "tasks/get"     // one poll of a task (a request, not a call)
	opTaskCreate   = "task-create"   // the tools/call that creates a task (a request)
	liveBroadcasts = 8               // a client keeps at most this many: channels stay small
	digestPageSize = 3               // a digest of a full channel reads 3 pages: 3 progress notifications
	callTimeout    = 2 * time.Minute // a safety net per request, not a measurement
)

// weights of the mix, out of 100: what a client does next.
var mix = []struct {
	op     string
	weight int
}{
	{opGet, 30}, {opList, 14}, {opCreate, 18}, {opDelete, 12},
	{opDigest, 10}, {opTask, 4},
	{opBadArgs, 3}, {opBadGone, 3}, {opBadScope, 3}, {opBadTool, 3},
}

// client is one MCP client of the soak: its own sessions, channel and live
// broadcasts, one call at a time.
type client struct {
	n       int
	rng     *rand.Rand
	rec     *recorder
	channel string
	session *mcp.ClientSession // the stack's token: every scope
	reader  *mcp.ClientSession // a token without broadcasts:write
	tasks   *taskConn
	live    []string // ids of this client's broadcasts, oldest first
	gone    []string // ids it deleted
	seq     int
}

// pick chooses the next operation, keeping the channel small: a create
// becomes a delete at liveBroadcasts, a read or a delete of nothing
// becomes a create.
func (c *client) pick() string {
	r := c.rng.IntN(100)
	op := mix[len(mix)-1].op
	for _, m := range mix {
		if r < m.weight {
			op = m.op
			break
		}
		r -= m.weight
	}
	switch {
	case op == opCreate && len(c.live) >= liveBroadcasts:
		return opDelete
	case (op == opGet || op == opDelete) && len(c.live) == 0:
		return opCreate
	case op == opBadGone && len(c.gone) == 0:
		return opBadArgs
	}
	return op
}

// run makes calls until stop is closed; the call in flight is finished
// (a call cut off would leave a row without its result).
func (c *client) run(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		c.do(c.pick())
	}
}

func (c *client) do(op string) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	switch op {
	case opGet:
		id := c.live[c.rng.IntN(len(c.live))]
		c.call(ctx, op, c.session, "broadcast_get", map[string]any{"id": id}, nil, func(out map[string]any) string {
			if out["id"] != id {
				return fmt.Sprintf("broadcast_get %s answered %v", id, out["id"])
			}
			return ""
		})
	case opList:
		c.call(ctx, op, c.session, "broadcast_list", map[string]any{"channel": c.channel}, nil, func(out map[string]any) string {
			items, _ := out["items"].([]any)
			if len(items) != len(c.live) {
				return fmt.Sprintf("broadcast_list of %s: %d broadcasts, the client holds %d", c.channel, len(items), len(c.live))
			}
			return ""
		})
	case opCreate:
		c.seq++
		text := fmt.Sprintf("soak message %d of client %d: %s", c.seq, c.n, words[c.rng.IntN(len(words))])
		c.call(ctx, op, c.session, "broadcast_create", map[string]any{"channel": c.channel, "text": text}, nil, func(out map[string]any) string {
			id, _ := out["id"].(string)
			if id == "" {
				return fmt.Sprintf("broadcast_create answered %v", out)
			}
			c.live = append(c.live, id)
			return ""
		})
	case opDelete:
		id := c.live[0]
		c.call(ctx, op, c.session, "broadcast_delete", map[string]any{"id": id}, nil, func(map[string]any) string {
			c.live = c.live[1:]
			c.gone = append(c.gone, id)
			if len(c.gone) > 32 {
				c.gone = c.gone[1:]
			}
			return ""
		})
	case opDigest:
		token := fmt.Sprintf("c%d-%d", c.n, c.seq)
		c.seq++
		c.call(ctx, op, c.session, "broadcast_digest", map[string]any{"channel": c.channel, "pageSize": digestPageSize}, token, func(out map[string]any) string {
			pages, _ := out["pages"].(float64)
			n, _ := out["broadcasts"].(float64)
			if int(n) != len(c.live) {
				return fmt.Sprintf("digest of %s: %v broadcasts, the client holds %d", c.channel, n, len(c.live))
			}
			c.rec.expectProgress(int64(pages))
			return ""
		})
	case opTask:
		c.task(ctx)
	case opBadArgs:
		c.call(ctx, op, c.session, "broadcast_get", map[string]any{"id": "not-an-id"}, nil, nil)
	case opBadGone:
		c.call(ctx, op, c.session, "broadcast_get", map[string]any{"id": c.gone[c.rng.IntN(len(c.gone))]}, nil, nil)
	case opBadScope:
		id := "AAAAAAAAAAAAAAAAAAAAAAAAAA" // well formed; the gateway refuses before any invoke
		c.call(ctx, op, c.reader, "broadcast_delete", map[string]any{"id": id}, nil, nil)
	case opBadTool:
		start := time.Now()
		_, err := c.session.CallTool(ctx, &mcp.CallToolParams{Name: "broadcast_nope", Arguments: map[string]any{}})
		var rpcErr *jsonrpc.Error
		problem := ""
		if !errors.As(err, &rpcErr) || !strings.Contains(rpcErr.Message, "unknown tool") {
			problem = fmt.Sprintf("a call of an unknown tool: %v, want a JSON-RPC error naming it", err)
		}
		c.rec.request(op, start, time.Since(start), "", problem)
	}
}

// expectedCode is the error code each bad request must get; "" for the
// operations that must succeed.
var expectedCode = map[string]string{opBadArgs: "VALIDATION_ERROR", opBadGone: "NOT_FOUND", opBadScope: "FORBIDDEN"}

// call makes one tools/call and records it; check judges a successful
// result's structured content ("" when it is right).
func (c *client) call(ctx context.Context, op string, cs *mcp.ClientSession, tool string, args map[string]any, progressToken any, check func(map[string]any) string) {
	p := &mcp.CallToolParams{Name: tool, Arguments: args}
	if progressToken != nil {
		p.SetProgressToken(progressToken)
	}
	start := time.Now()
	res, err := cs.CallTool(ctx, p)
	d := time.Since(start)
	if err != nil {
		c.rec.request(op, start, d, "", fmt.Sprintf("%s: %v", tool, err))
		return
	}
	callID, _ := res.Meta[gateway.MetaCallID].(string)
	problem := ""
	switch want := expectedCode[op]; {
	case callID == "":
		problem = fmt.Sprintf("%s: the result has no %s in _meta", tool, gateway.MetaCallID)
	case want != "":
		if code := errorCode(res); !res.IsError || code != want {
			problem = fmt.Sprintf("%s: got %s (isError %v), want %s", tool, code, res.IsError, want)
		}
	case res.IsError:
		problem = fmt.Sprintf("%s: tool error %s", tool, errorCode(res))
	default:
		b, _ := json.Marshal(res.StructuredContent)
		var out map[string]any
		_ = json.Unmarshal(b, &out)
		if check != nil {
			problem = check(out)
		}
	}
	c.rec.request(op, start, d, callID, problem)
}

// errorCode is the code of an isError result's body ({error, message, …}).
func errorCode(res *mcp.CallToolResult) string {
	for _, ct := range res.Content {
		if t, ok := ct.(*mcp.TextContent); ok {
			var body struct {
				Error string `json:"error"`
			}
			if json.Unmarshal([]byte(t.Text), &body) == nil && body.Error != "" {
				return body.Error
			}
		}
	}
	return ""
}

// task runs broadcast_digest as a task: the tools/call that creates it,
// then tasks/get every pollIntervalMs until it ends, as a client does.
func (c *client) task(ctx context.Context) {
	begin := time.Now()
	created, err := c.tasks.request(ctx, "tools/call", map[string]any{"name": "broadcast_digest", "arguments": map[string]any{"channel": c.channel, "pageSize": digestPageSize}})
	c.rec.request(opTaskCreate, begin, time.Since(begin), "", errText(err))
	if err != nil {
		c.rec.task("", begin, fmt.Sprintf("creating a task: %v", err))
		return
	}
	id, _ := created["taskId"].(string)
	if created["resultType"] != "task" || id == "" {
		c.rec.task("", begin, fmt.Sprintf("tools/call with the tasks extension answered %v, want a CreateTaskResult", created))
		return
	}
	task := created
	for {
		time.Sleep(pollInterval(task))
		start := time.Now()
		task, err = c.tasks.request(ctx, "tasks/get", map[string]any{"taskId": id})
		c.rec.request(opTaskPoll, start, time.Since(start), "", errText(err))
		if err != nil {
			c.rec.task(id, begin, fmt.Sprintf("tasks/get %s: %v", id, err))
			return
		}
		switch task["status"] {
		case "working":
			continue
		case "completed":
			b, _ := json.Marshal(task["result"])
			if !bytes.Contains(b, []byte(c.channel)) {
				c.rec.task(id, begin, fmt.Sprintf("task %s completed with %s, not the channel's digest", id, b))
				return
			}
			c.rec.task(id, begin, "")
			return
		default:
			c.rec.task(id, begin, fmt.Sprintf("task %s: %v", id, task))
			return
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// pollInterval is a task's pollIntervalMs (1 s when it has none).
func pollInterval(task map[string]any) time.Duration {
	if ms, ok := task["pollIntervalMs"].(float64); ok && ms > 0 {
		return time.Duration(ms) * time.Millisecond
	}
	return time.Second
}

// taskConn is a go-sdk client connection on which the Tasks extension's
// messages are written and read as JSON-RPC: go-sdk v1.8 has no Tasks API
// (its CallToolResult drops a task), so the messages are the soak's, the
// HTTP, headers and SSE handling the SDK's.
type taskConn struct {
	conn mcp.Connection
	id   int64
}

const (
	tasksExtension  = "io.modelcontextprotocol/tasks"
	protocolVersion = "2026-07-28"
)

func (c *taskConn) request(ctx context.Context, method string, params map[string]any) (map[string]any, error) {
	c.id++
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    protocolVersion,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "mcpfn-soak", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{tasksExtension: map[string]any{}}},
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	id, _ := jsonrpc.MakeID(float64(c.id))
	if err := c.conn.Write(ctx, &jsonrpc.Request{ID: id, Method: method, Params: raw}); err != nil {
		return nil, err
	}
	for {
		msg, err := c.conn.Read(ctx)
		if err != nil {
			return nil, err
		}
		resp, ok := msg.(*jsonrpc.Response)
		if !ok || resp.ID != id {
			continue // a notification on the request's stream
		}
		if resp.Error != nil {
			return nil, resp.Error
		}
		var out map[string]any
		if err := json.Unmarshal(resp.Result, &out); err != nil {
			return nil, err
		}
		return out, nil
	}
}

// bearer puts a token on every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// taskName is the header go-sdk v1.8 does not set for the Tasks
// extension's requests: a tasks/* request's Mcp-Name is its params.taskId.
type taskName struct{ next http.RoundTripper }

func (h taskName) RoundTrip(r *http.Request) (*http.Response, error) {
	if !strings.HasPrefix(r.Header.Get("Mcp-Method"), "tasks/") || r.Body == nil {
		return h.next.RoundTrip(r)
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	var msg struct {
		Params struct {
			TaskID string `json:"taskId"`
		} `json:"params"`
	}
	_ = json.Unmarshal(body, &msg)
	r = r.Clone(r.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.Header.Set("Mcp-Name", msg.Params.TaskID)
	return h.next.RoundTrip(r)
}

// words give the digests' top words something to count.
var words = []string{
	"lambda gateway forwards every call", "audit rows reconcile with calls",
	"memory stays flat under load", "progress arrives while the digest runs",
	"tasks finish and report their digest", "signed calls reach their functions",
}
