package localtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/localtest"
	"github.com/mcpfn/mcpfn/localtest/conformance"
	"github.com/mcpfn/mcpfn/localtest/internal/held"
)

// The cancellation end-to-end tests (docs/decisions/0030): a client's cancel
// through the stack's JWT gateway reaches the handler of its own call, and
// only that one. Their tool is the held fixture: each call reports to the
// test's server when its handler starts and when its context ends, and
// answers when the test releases it, so the tests wait on those reports.
const (
	heldFunction = "HeldFunction"
	// heldWatch is how often the held function reads its call's cancel
	// marker (MCPFN_TASK_WATCH_INTERVAL; 2 s by default on AWS).
	heldWatch = time.Second
)

// heldFunctions are the fixtures these tests run (testConfig adds them).
func heldFunctions() []localtest.FunctionSpec {
	return []localtest.FunctionSpec{{Name: heldFunction, Package: "./localtest/internal/held/function", Tool: held.Name,
		Env: map[string]string{adapter.EnvTaskWatchInterval: heldWatch.String()}, Timeout: 60}}
}

// holdEvent is a handler's report, with when the test received it.
type holdEvent struct {
	held.Report
	at time.Time
}

// holdServer is the held calls' notify server.
type holdServer struct {
	*httptest.Server
	started, stopped chan holdEvent
	mu               sync.Mutex
	gates            map[string]chan struct{}
}

func newHoldServer(t *testing.T) *holdServer {
	h := &holdServer{started: make(chan holdEvent, 8), stopped: make(chan holdEvent, 8), gates: map[string]chan struct{}{}}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/started", "/stopped":
			var ev holdEvent
			if err := json.NewDecoder(r.Body).Decode(&ev.Report); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			ev.at = time.Now()
			if r.URL.Path == "/started" {
				h.started <- ev
			} else {
				h.stopped <- ev
			}
		case "/release":
			select {
			case <-h.gate(r.URL.Query().Get("label")):
			case <-r.Context().Done(): // the call's context ended
				http.Error(w, "not released", http.StatusServiceUnavailable)
			}
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(h.Close)
	// First (cleanups run last-in first-out): release what is still held.
	t.Cleanup(func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		for label, g := range h.gates {
			select {
			case <-g:
			default:
				close(g)
			}
			delete(h.gates, label)
		}
	})
	return h
}

func (h *holdServer) gate(label string) chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.gates[label] == nil {
		h.gates[label] = make(chan struct{})
	}
	return h.gates[label]
}

func (h *holdServer) release(label string) { close(h.gate(label)) }

// args are a held call's arguments.
func (h *holdServer) args(label string) map[string]any {
	return map[string]any{"notify": h.URL, "label": label}
}

// nextReport is the next report on ch. The timeout is a safety net for a report
// that never comes, not a timing assertion.
func nextReport(t *testing.T, ch <-chan holdEvent) holdEvent {
	t.Helper()
	select {
	case ev := <-ch:
		return ev
	case <-time.After(time.Minute):
		t.Fatal("no report from the held call within a minute")
		return holdEvent{}
	}
}

// connectVersion opens a go-sdk client session as token's subject; version ""
// is the SDK's latest (2026-07-28).
func connectVersion(t *testing.T, token, version string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpfn-cancel-e2e", Version: "1"}, nil)
	var opts *mcp.ClientSessionOptions
	if version != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{
		Endpoint:   stack.MCPURL(),
		HTTPClient: &http.Client{Transport: bearer{token}, Timeout: 2 * time.Minute},
	}, opts)
	if err != nil {
		t.Fatalf("connecting (%q): %v", version, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func tokenFor(t *testing.T, subject string) string {
	t.Helper()
	token, err := stack.MintToken(map[string]any{"sub": subject, "scope": demoScope})
	if err != nil {
		t.Fatal(err)
	}
	return token
}

// postMessage sends one JSON-RPC message to the gateway with the bearer token and
// headers (a header whose value is "" is left out); it returns the status
// and the body.
func postMessage(ctx context.Context, t *testing.T, token string, msg any, headers map[string]string) (int, []byte, error) {
	t.Helper()
	body, _ := json.Marshal(msg)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, stack.MCPURL(), bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	for k, v := range headers {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// modernMeta is the _meta every 2026-07-28 request carries.
func modernMeta(caps map[string]any) map[string]any {
	return map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "mcpfn-cancel-e2e", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": caps,
	}
}

// rowsOfCall are the audit rows of call id (the caller's rows, read once the
// functions' post-response work is done).
func rowsOfCall(t *testing.T, subject, callID string) []audit.Row {
	t.Helper()
	rows, err := auditor().CallerRows(t.Context(), localCaller(subject), audit.QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []audit.Row
	for _, r := range rows {
		if r.CallID == callID {
			out = append(out, r)
		}
	}
	return out
}

// checkRows: one row for the call, with its outcome.
func checkCallRow(t *testing.T, subject, callID string, cancelled bool) {
	t.Helper()
	rows := rowsOfCall(t, subject, callID)
	switch {
	case len(rows) != 1:
		t.Errorf("call %s: %d audit rows %+v, want one", callID, len(rows), rows)
	case cancelled && (!rows[0].Cancelled || rows[0].ErrorCode != string(adapter.CodeCancelled)):
		t.Errorf("call %s: row %+v, want cancelled (CANCELLED)", callID, rows[0])
	case !cancelled && (!rows[0].OK || rows[0].Cancelled):
		t.Errorf("call %s: row %+v, want a successful call", callID, rows[0])
	}
}

// wasReleased checks a held call's successful answer.
func wasReleased(t *testing.T, res *mcp.CallToolResult, err error, label string) {
	t.Helper()
	if err != nil || res == nil || res.IsError {
		t.Fatalf("call %s: %v %+v", label, err, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out held.Output
	if json.Unmarshal(b, &out) != nil || out.Label != label || !out.Released {
		t.Fatalf("call %s answered %s", label, b)
	}
}

type callOutcome struct {
	res *mcp.CallToolResult
	err error
}

// TestModernDisconnectCancelsOnlyThatCall: three concurrent 2026-07-28
// calls of one caller with one JSON-RPC id: a from the go-sdk client, b and
// c in raw HTTP. The go-sdk client gives up on a (it closes the request's
// stream, which is that revision's cancel; a notifications/cancelled it may
// send as well changes nothing), and b's connection is closed with no
// message at all: each handler's context ends within two watch intervals,
// and each call has one audit row, saying cancelled. c runs to completion.
func TestModernDisconnectCancelsOnlyThatCall(t *testing.T) {
	subject := unique("hangup")
	token := tokenFor(t, subject)
	hs := newHoldServer(t)
	cs := connectVersion(t, token, "")

	ctxA, giveUp := context.WithCancel(t.Context())
	outA := make(chan callOutcome, 1)
	go func() {
		res, err := cs.CallTool(ctxA, &mcp.CallToolParams{Name: held.Name, Arguments: hs.args("a")})
		outA <- callOutcome{res, err}
	}()
	a := nextReport(t, hs.started)
	id, _ := strconv.Atoi(a.JSONRPCID)
	raw := func(ctx context.Context, label string) <-chan []byte {
		out := make(chan []byte, 1)
		go func() {
			status, b, err := postMessage(ctx, t, token, map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
				"params": map[string]any{"name": held.Name, "arguments": hs.args(label), "_meta": modernMeta(map[string]any{})}},
				map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": held.Name})
			if ctx.Err() == nil && (err != nil || status != http.StatusOK) {
				t.Errorf("call %s: %v %d %s", label, err, status, b)
			}
			out <- b
		}()
		return out
	}
	ctxB, hangUp := context.WithCancel(t.Context())
	outB := raw(ctxB, "b")
	b := nextReport(t, hs.started)
	outC := raw(t.Context(), "c")
	c := nextReport(t, hs.started)
	if a.Label != "a" || b.Label != "b" || c.Label != "c" || a.JSONRPCID != b.JSONRPCID || b.JSONRPCID != c.JSONRPCID {
		t.Fatalf("started %+v, %+v and %+v: want calls a, b and c with one JSON-RPC id", a, b, c)
	}

	for _, stop := range []struct {
		label  string
		cancel context.CancelFunc
	}{{"a", giveUp}, {"b", hangUp}} {
		at := time.Now()
		stop.cancel()
		stopped := nextReport(t, hs.stopped)
		if stopped.Label != stop.label {
			t.Fatalf("closing %s's stream stopped %+v", stop.label, stopped)
		}
		took := stopped.at.Sub(at)
		if !strings.Contains(stopped.Cause, "cancelled the call") {
			t.Errorf("%s's handler stopped for %q, want its cancel marker (the adapter's cancel)", stop.label, stopped.Cause)
		}
		if took > 2*heldWatch {
			t.Errorf("%s's handler stopped %v after its stream closed, want within two watch intervals (%v)", stop.label, took, 2*heldWatch)
		}
		t.Logf("%s's handler stopped %v after its stream closed (watch interval %v): %s", stop.label, took.Round(time.Millisecond), heldWatch, stopped.Cause)
	}
	if o := <-outA; !errors.Is(o.err, context.Canceled) {
		t.Errorf("the client's call ended %v %+v, want its own cancellation", o.err, o.res)
	}
	<-outB

	hs.release("c")
	var msg struct {
		Result *mcp.CallToolResult `json:"result"`
	}
	if err := json.Unmarshal(<-outC, &msg); err != nil {
		t.Fatal(err)
	}
	wasReleased(t, msg.Result, nil, "c")
	checkCallRow(t, subject, a.CallID, true)
	checkCallRow(t, subject, b.CallID, true)
	checkCallRow(t, subject, c.CallID, false)
}

// TestLegacyCancelReachesOnlyItsOwnSession: two 2025-11-25 go-sdk clients
// of one caller each get a session id of their own at initialize, and
// number their requests alike, so their calls share a JSON-RPC id. A
// notifications/cancelled from another caller presenting one session's id,
// or from the caller without a session id, is accepted; the cancel the
// first client sends when it gives up stops its call's handler (within two
// watch intervals), and the other call runs to completion.
func TestLegacyCancelReachesOnlyItsOwnSession(t *testing.T) {
	subject := unique("sessions")
	token := tokenFor(t, subject)
	hs := newHoldServer(t)
	csA, csB := connectVersion(t, token, "2025-11-25"), connectVersion(t, token, "2025-11-25")
	if csA.ID() == "" || csB.ID() == "" || csA.ID() == csB.ID() {
		t.Fatalf("session ids %q and %q: want one of its own for each client", csA.ID(), csB.ID())
	}
	ctxA, giveUp := context.WithCancel(t.Context())
	outA, outB := make(chan callOutcome, 1), make(chan callOutcome, 1)
	go func() {
		res, err := csA.CallTool(ctxA, &mcp.CallToolParams{Name: held.Name, Arguments: hs.args("a")})
		outA <- callOutcome{res, err}
	}()
	a := nextReport(t, hs.started)
	go func() {
		res, err := csB.CallTool(t.Context(), &mcp.CallToolParams{Name: held.Name, Arguments: hs.args("b")})
		outB <- callOutcome{res, err}
	}()
	b := nextReport(t, hs.started)
	if a.Label != "a" || b.Label != "b" || a.JSONRPCID != b.JSONRPCID || a.SessionID != csA.ID() || b.SessionID != csB.ID() {
		t.Fatalf("started %+v and %+v: want calls a and b with one JSON-RPC id, each in its client's session", a, b)
	}

	// Cancels that name the request id but not b's session: accepted.
	other := tokenFor(t, unique("sessions-other"))
	id := json.RawMessage(a.JSONRPCID)
	for _, c := range []struct{ token, session string }{{other, csB.ID()}, {token, ""}} {
		status, body, err := postMessage(t.Context(), t, c.token, map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled",
			"params": map[string]any{"requestId": id}}, map[string]string{"Mcp-Protocol-Version": "2025-11-25", "Mcp-Session-Id": c.session})
		if err != nil || status != http.StatusAccepted {
			t.Fatalf("notifications/cancelled: %v %d %s", err, status, body)
		}
	}

	gaveUp := time.Now()
	giveUp()
	stopped := nextReport(t, hs.stopped)
	if stopped.Label != "a" {
		t.Fatalf("the cancel stopped %+v, want a", stopped)
	}
	if took := stopped.at.Sub(gaveUp); took > 2*heldWatch {
		t.Errorf("the handler stopped %v after the cancel, want within two watch intervals (%v)", took, 2*heldWatch)
	}
	if o := <-outA; !errors.Is(o.err, context.Canceled) {
		t.Errorf("the client's call ended %v %+v, want its own cancellation", o.err, o.res)
	}
	hs.release("b")
	o := <-outB
	wasReleased(t, o.res, o.err, "b")
	checkCallRow(t, subject, a.CallID, true)
	checkCallRow(t, subject, b.CallID, false)
}

// markersSince counts the cancel markers written to the tasks table since
// t0 (items "cancel#…" with a markedAt, docs/decisions/0022).
func markersSince(t *testing.T, t0 time.Time) int {
	t.Helper()
	return len(scanAll(t, &dynamodb.ScanInput{
		TableName:        aws.String(stack.Table("TasksTable")),
		ConsistentRead:   aws.Bool(true),
		FilterExpression: aws.String("begins_with(taskId, :p) AND markedAt >= :t"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":p": &types.AttributeValueMemberS{Value: "cancel#"},
			":t": &types.AttributeValueMemberN{Value: strconv.FormatInt(t0.UnixMilli(), 10)},
		},
	}))
}

// TestRefusedCancelsChangeNothing: a notifications/cancelled, tasks/cancel
// or tasks/get that fails the protocol version or header checks is
// answered 400 and changes nothing: no cancel marker is written, the call
// runs to completion, the task keeps working.
func TestRefusedCancelsChangeNothing(t *testing.T) {
	subject := unique("refused")
	token := tokenFor(t, subject)
	hs := newHoldServer(t)
	cs := connectVersion(t, token, "2025-11-25")
	t0 := time.Now()
	out := make(chan callOutcome, 1)
	go func() {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: held.Name, Arguments: hs.args("r")})
		out <- callOutcome{res, err}
	}()
	r := nextReport(t, hs.started)
	for name, headers := range map[string]map[string]string{
		"an unsupported version":        {"Mcp-Protocol-Version": "1999-01-01", "Mcp-Session-Id": cs.ID()},
		"2026-07-28 without Mcp-Method": {"Mcp-Protocol-Version": "2026-07-28", "Mcp-Session-Id": cs.ID()},
	} {
		status, body, err := postMessage(t.Context(), t, token, map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled",
			"params": map[string]any{"requestId": json.RawMessage(r.JSONRPCID)}}, headers)
		if err != nil || status != http.StatusBadRequest {
			t.Errorf("notifications/cancelled with %s: %v %d %s, want 400", name, err, status, body)
		}
	}
	if n := markersSince(t, t0); n != 0 {
		t.Fatalf("refused cancels wrote %d markers", n)
	}
	hs.release("r")
	o := <-out
	wasReleased(t, o.res, o.err, "r")

	owner := newRPCClient(t, subject)
	taskID := owner.startTask(t, conformance.ToolSlowCompute, map[string]any{"seconds": 600, "label": unique("refused-task")})
	tasks := map[string]any{"extensions": map[string]any{tasksExtension: map[string]any{}}}
	for name, headers := range map[string]map[string]string{
		"an unsupported version":           {"Mcp-Protocol-Version": "1999-01-01"},
		"header and _meta versions differ": {"Mcp-Protocol-Version": "2025-11-25"},
		"no Mcp-Method":                    {"Mcp-Method": ""},
		"another Mcp-Method":               {"Mcp-Method": "tasks/update"},
	} {
		for _, method := range []string{"tasks/cancel", "tasks/get"} {
			h := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": method, "Mcp-Name": taskID}
			for k, v := range headers {
				h[k] = v
			}
			status, body, err := postMessage(t.Context(), t, owner.token, map[string]any{"jsonrpc": "2.0", "id": 1, "method": method,
				"params": map[string]any{"taskId": taskID, "_meta": modernMeta(tasks)}}, h)
			if err != nil || status != http.StatusBadRequest {
				t.Errorf("%s with %s: %v %d %s, want 400", method, name, err, status, body)
			}
		}
	}
	if got := owner.getTask(t, taskID)["status"]; got != "working" {
		t.Fatalf("after refused cancels the task is %v", got)
	}
	owner.mustCall(t, "tasks/cancel", taskID, map[string]any{"taskId": taskID})
	if got := owner.getTask(t, taskID)["status"]; got != "cancelled" {
		t.Fatalf("after tasks/cancel the task is %v", got)
	}
}
