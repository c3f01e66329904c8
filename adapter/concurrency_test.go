package adapter_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpfn/mcpfn/adapter"
)

// slowWidget waits a random few ms before and after writing its dimension,
// so concurrent calls interleave at every step. The tests run it under
// testing/synctest: the waits order the goroutines without taking real time.
func slowWidget(d *adapter.ToolDef[widgetIn, widgetOut]) {
	d.Handler = func(ctx context.Context, c *adapter.Call, in widgetIn) (widgetOut, error) {
		sleepRandom(ctx)
		c.SetDimension("entityId", in.EntityID)
		sleepRandom(ctx)
		if in.Fail == "app" {
			return widgetOut{}, adapter.NewError(adapter.CodeConflict, "conflict on "+in.EntityID)
		}
		return widgetOut{EntityID: in.EntityID, Caller: callerOf(c)}, nil
	}
}

// callerOf is the verified caller's subject, else the stand-in a test hook
// stamped as the "caller" dimension.
func callerOf(c *adapter.Call) string {
	if id := c.Caller(); id != nil {
		return id.Subject
	}
	v, _ := c.Dimension("caller")
	return v
}

func sleepRandom(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(time.Duration(rand.IntN(5)) * time.Millisecond):
	}
}

// checkIsolation asserts that every call's AfterToolCall saw exactly its own
// dimension, identity, trace parent and error: the ADR 0045 defect, through
// the real entry point.
func checkIsolation(t *testing.T, seen []observed, n int) {
	t.Helper()
	if len(seen) != n {
		t.Fatalf("AfterToolCall fired %d times, want %d", len(seen), n)
	}
	byEntity := map[string]bool{}
	for _, o := range seen {
		var args widgetIn
		if err := json.Unmarshal([]byte(o.Arguments), &args); err != nil {
			t.Fatal(err)
		}
		e := args.EntityID
		if byEntity[e] {
			t.Fatalf("entity %s observed twice", e)
		}
		byEntity[e] = true
		if o.Dimensions["entityId"] != e {
			t.Errorf("call for %s saw entityId dimension %q", e, o.Dimensions["entityId"])
		}
		caller := o.Dimensions["caller"]
		if o.Caller != nil {
			caller = o.Caller.Subject
		}
		if caller != "user-"+e {
			t.Errorf("call for %s saw caller %q", e, caller)
		}
		parent := o.Trace.Parent
		if p, ok := o.Dimensions["traceParent"]; ok {
			parent = p
		}
		if parent != fmt.Sprintf("%016x", mustAtoi(t, strings.TrimPrefix(e, "e"))) {
			t.Errorf("call for %s saw trace parent %q", e, parent)
		}
		wantErr := mustAtoi(t, strings.TrimPrefix(e, "e"))%3 == 0
		if wantErr != (o.Err != nil) || (wantErr && !strings.Contains(o.Err.Error(), "conflict on "+e)) {
			t.Errorf("call for %s saw error %v", e, o.Err)
		}
	}
}

func mustAtoi(t *testing.T, s string) int {
	var n int
	if _, err := fmt.Sscanf(s, "%d", &n); err != nil {
		t.Fatalf("bad entity %q", s)
	}
	return n
}

func entityArgs(i int) map[string]any {
	a := map[string]any{"entityId": fmt.Sprintf("e%d", i)}
	if i%3 == 0 {
		a["fail"] = "app"
	}
	return a
}

func traceFor(i int) string {
	return fmt.Sprintf("Root=1-5759e988-bd862e3fe1be46a994272%03d;Parent=%016x;Sampled=1", i, i)
}

// TestConcurrentInvocationsAreIsolated: 200 concurrent invocations of one
// Function value (Lambda Managed Instances run several in one process).
func TestConcurrentInvocationsAreIsolated(t *testing.T) {
	synctest.Test(t, testConcurrentInvocationsAreIsolated)
}

func testConcurrentInvocationsAreIsolated(t *testing.T) {
	rec := newRecorder()
	fn := newFunction(widgetTool(t, slowWidget), adapter.WithHooks(rec.hooks()))
	const n = 200
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			caller := &adapter.Identity{Subject: fmt.Sprintf("user-e%d", i), AuthMethod: "jwt"}
			payload := envelopeOf(t, fmt.Sprintf("call-%d", i), "widget_update", entityArgs(i), caller)
			raw := invoke(t, fn, payload, lambdaInvoke{RequestID: fmt.Sprintf("req-%d", i), Trace: traceFor(i)})
			res, _ := envelopeResult(t, raw)
			if i%3 != 0 && string(res.StructuredContent) != fmt.Sprintf(`{"entityId":"e%d","caller":"user-e%d"}`, i, i) {
				t.Errorf("call %d got result %s", i, res.StructuredContent)
			}
		})
	}
	wg.Wait()
	checkIsolation(t, rec.done, n)
}

// TestBatchCallsAreIsolated: the calls of one JSON-RPC batch run
// concurrently, each in its own context, and answer in order.
func TestBatchCallsAreIsolated(t *testing.T) {
	synctest.Test(t, testBatchCallsAreIsolated)
}

func testBatchCallsAreIsolated(t *testing.T) {
	rec := newRecorder()
	// Identity cannot come over plain JSON-RPC (nothing verified it) and no
	// hook can set it, so the batch test stamps a stand-in caller and trace
	// parent as dimensions, which are as much the call's own.
	stamp := adapter.Hooks{BeforeToolCall: func(_ context.Context, c *adapter.Call, args json.RawMessage) (json.RawMessage, error) {
		var in widgetIn
		_ = json.Unmarshal(args, &in)
		c.SetDimension("caller", "user-"+in.EntityID)
		c.SetDimension("traceParent", fmt.Sprintf("%016x", mustAtoi(t, strings.TrimPrefix(in.EntityID, "e"))))
		return nil, nil
	}}
	fn := newFunction(widgetTool(t, slowWidget), adapter.WithHooks(stamp, rec.hooks()))
	const n = 100
	var batch []map[string]any
	for i := range n {
		batch = append(batch, map[string]any{"jsonrpc": "2.0", "id": i, "method": "tools/call",
			"params": map[string]any{"name": "widget_update", "arguments": entityArgs(i)}})
	}
	raw := invoke(t, fn, mustJSON(t, batch), lambdaInvoke{})
	var resps []struct {
		ID     int        `json:"id"`
		Result callResult `json:"result"`
	}
	if err := json.Unmarshal(raw, &resps); err != nil || len(resps) != n {
		t.Fatalf("want %d responses: %v %s", n, err, raw)
	}
	for i, r := range resps {
		if r.ID != i {
			t.Fatalf("response %d has id %d: responses must keep the batch order", i, r.ID)
		}
		if i%3 != 0 && string(r.Result.StructuredContent) != fmt.Sprintf(`{"entityId":"e%d","caller":"user-e%d"}`, i, i) {
			t.Errorf("response %d: %s", i, r.Result.StructuredContent)
		}
	}
	checkIsolation(t, rec.done, n)
	ids := map[string]bool{}
	for _, o := range rec.done {
		ids[o.CallID] = true
	}
	if len(ids) != n {
		t.Fatalf("batch calls share call ids: %d distinct of %d", len(ids), n)
	}
}

// startsOwnTrace: t is a new trace the call started, with no parent and
// nothing taken from the caller.
func startsOwnTrace(t adapter.Trace) bool {
	return t.From == "new" && t.WellFormed() && t.Parent == "" && t.Header == "" && t.Sampled == ""
}

// TestTraceParentComesFromTheInvocation: never from _X_AMZN_TRACE_ID, which
// concurrent invocations share on Lambda Managed Instances.
func TestTraceParentComesFromTheInvocation(t *testing.T) {
	t.Setenv("_X_AMZN_TRACE_ID", "Root=1-decoy-decoy;Parent=dec0ydec0ydec0y0;Sampled=1")
	run := func(payload []byte, header string) observed {
		rec := newRecorder()
		fn := newFunction(widgetTool(t), adapter.WithHooks(rec.hooks()))
		invoke(t, fn, payload, lambdaInvoke{Trace: header})
		return rec.only(t)
	}
	args := map[string]any{"entityId": "w"}

	got := run(envelopeOf(t, "c1", "widget_update", args, nil), "Root=1-aaa-bbb;Parent=53995c3f42cd8ad8;Sampled=1")
	if got.Trace.Root != "1-aaa-bbb" || got.Trace.Parent != "53995c3f42cd8ad8" || got.Trace.Sampled != "1" || got.Trace.From != "lambda" {
		t.Fatalf("trace = %+v", got.Trace)
	}

	// sam local gives no header: the caller's header from the envelope.
	const envRoot = "1-5f84c7a1-cccccccccccccccccccccccc"
	env := map[string]any{"mcpfn": "1", "callId": "c2", "traceHeader": "Root=" + envRoot + ";Parent=1111111111111111;Sampled=0",
		"params": map[string]any{"name": "widget_update", "arguments": args}}
	got = run(mustJSON(t, env), "")
	if got.Trace.Root != envRoot || got.Trace.Parent != "1111111111111111" || got.Trace.From != "envelope" {
		t.Fatalf("trace = %+v", got.Trace)
	}
	// The envelope's header is payload: a malformed one (here a credential
	// where the root should be) is dropped, never copied into the row.
	for _, h := range []string{"Root=Bearer sk-live-0123456789abcdef;Sampled=1", "Root=1-ccc-ddd;Parent=1111111111111111", "Root=" + envRoot + ";Parent=xyz"} {
		env["traceHeader"] = h
		if got = run(mustJSON(t, env), ""); !startsOwnTrace(got.Trace) {
			t.Fatalf("envelope header %q kept as %+v", h, got.Trace)
		}
	}

	// Nothing anywhere: no parent invented; the call starts a trace of
	// its own, minted once when the call is built, so every observer (the
	// audit's pending and final rows) names the same one.
	got = run(envelopeOf(t, "c3", "widget_update", args, nil), "")
	if !startsOwnTrace(got.Trace) {
		t.Fatalf("a parent was invented: %+v", got.Trace)
	}
	if got.Trace.SpanID == "" {
		t.Fatal("the call still has its own span id")
	}

	// A W3C traceparent in _meta (SEP-414) is the parent where no X-Ray
	// header exists: the same trace and parent, in X-Ray spelling.
	env = map[string]any{"mcpfn": "1", "callId": "c5", "params": map[string]any{"name": "widget_update", "arguments": args,
		"_meta": map[string]any{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}}
	got = run(mustJSON(t, env), "")
	if got.Trace.Root != "1-4bf92f35-77b34da6a3ce929d0e0e4736" || got.Trace.Parent != "00f067aa0ba902b7" ||
		got.Trace.Sampled != "1" || got.Trace.From != "traceparent" || got.Trace.Link != "" {
		t.Fatalf("traceparent without an X-Ray header: trace = %+v", got.Trace)
	}
	// A malformed one starts nothing.
	env["params"].(map[string]any)["_meta"] = map[string]any{"traceparent": "00-zz-00f067aa0ba902b7-01"}
	env["callId"] = "c6"
	got = run(mustJSON(t, env), "")
	if !startsOwnTrace(got.Trace) {
		t.Fatalf("malformed traceparent: trace = %+v", got.Trace)
	}

	// With an X-Ray header, a W3C traceparent in _meta is a link, never
	// the parent.
	env = map[string]any{"mcpfn": "1", "callId": "c4", "params": map[string]any{"name": "widget_update", "arguments": args,
		"_meta": map[string]any{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}}
	got = run(mustJSON(t, env), "Root=1-eee-fff;Parent=2222222222222222")
	if got.Trace.Parent != "2222222222222222" || got.Trace.Link != "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" {
		t.Fatalf("trace = %+v", got.Trace)
	}
}
