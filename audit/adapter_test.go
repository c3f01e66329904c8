package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/internal/lambdatest"
	"github.com/mcpfn/mcpfn/internal/xraystandin"
	"github.com/mcpfn/mcpfn/wire"
)

// These tests drive the audit through the adapter's Lambda entry point, the
// way a deployed function runs: the row is built from the adapter's per-call
// context, not by the test (ADR 0045: tests that call the audit hook directly
// are how a cross-call stamping bug survived).

type deleteIn struct {
	ID       string `json:"id"`
	Password string `json:"password,omitempty"`
	Fail     bool   `json:"fail,omitempty"`
}

type deleteOut struct {
	Deleted string `json:"deleted"`
}

func deleteTool(t testing.TB, destructive bool) *adapter.Tool {
	t.Helper()
	tool, err := adapter.Define(adapter.ToolDef[deleteIn, deleteOut]{
		Name:        "broadcast_delete",
		Destructive: destructive,
		Handler: func(ctx context.Context, call *adapter.Call, in deleteIn) (deleteOut, error) {
			call.SetDimension("entityId", in.ID)
			if in.Fail {
				return deleteOut{}, errors.New("dial tcp 10.0.0.7:5432: connection refused")
			}
			return deleteOut{Deleted: in.ID}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

// testFunction is the function name the tests' call tokens are for.
const testFunction = "broadcast_delete"

// newFunction is adapter.New with the test function's call-token verifier,
// as Start gives a deployed function its own.
func newFunction(tool *adapter.Tool, opts ...adapter.Option) *adapter.Function {
	return adapter.New(tool, append([]adapter.Option{adapter.WithCallVerifier(lambdatest.Verifier(testFunction))}, opts...)...)
}

// envelope is a signed envelope of a broadcast_delete call by user-7.
func envelope(t testing.TB, callID string, args any) []byte {
	t.Helper()
	argsJSON, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(map[string]any{
		"mcpfn":     wire.EnvelopeVersion,
		"callId":    callID,
		"params":    map[string]any{"name": "broadcast_delete", "arguments": json.RawMessage(argsJSON)},
		"mcp":       map[string]any{"era": "modern", "method": "tools/call", "protocolVersion": "2026-07-28"},
		"callToken": lambdatest.Token(testFunction, "broadcast_delete", callID, &adapter.Identity{Subject: "user-7", AuthMethod: "jwt"}, argsJSON),
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// invokeLambda calls fn the way aws-lambda-go's runtime loop does: a
// deadline, lambdacontext, and the invocation's own trace header.
func invokeLambda(t testing.TB, fn *adapter.Function, payload []byte, traceHeader string) []byte {
	t.Helper()
	return invokeLambdaWithin(t, fn, payload, traceHeader, 10*time.Second)
}

// invokeLambdaWithin is invokeLambda with the function's timeout.
func invokeLambdaWithin(t testing.TB, fn *adapter.Function, payload []byte, traceHeader string, timeout time.Duration) []byte {
	t.Helper()
	ctx, cancel := lambdatest.Context(context.Background(), lambdatest.Invocation{
		RequestID:   fmt.Sprintf("req-%d", time.Now().UnixNano()),
		FunctionARN: "arn:aws:lambda:us-east-1:123456789012:function:broadcast_delete",
		Trace:       traceHeader,
		Timeout:     timeout,
	})
	defer cancel()
	out, err := lambda.NewHandler(fn).Invoke(ctx, payload)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

const lambdaRoot, lambdaParent = "1-5f84c7a1-0123456789abcdef01234567", "53995c3f42cd8ad8"

func TestAdapterCallRowMatchesItsSubsegment(t *testing.T) {
	e := newEnv(t)
	fn := newFunction(deleteTool(t, false), adapter.WithAuditor(e.auditor(t, audit.Config{})))
	invokeLambda(t, fn, envelope(t, "call-a1", deleteIn{ID: "b-1", Password: "hunter2"}),
		"Root="+lambdaRoot+";Parent="+lambdaParent+";Sampled=1")

	it := e.item(t, "call-a1")
	if str(it, "traceId") != lambdaRoot || str(it, "parentSpanId") != lambdaParent || str(it, "entityKey") != "entityId#b-1" ||
		str(it, "callerKey") != "jwt###user-7" || str(it, "status") != audit.StatusDone {
		t.Fatalf("row: %v", it)
	}
	if p := str(it, "argsPreview"); p != `{"id":"b-1","password":"[redacted]"}` {
		t.Errorf("preview %s", p)
	}
	span := str(it, "spanId")
	doc, err := e.daemon.WaitFor(waitCtx(t), func(d xraystandin.Document) bool { return d.ID == span })
	if err != nil {
		t.Fatal(err)
	}
	if doc.Type != "subsegment" || doc.TraceID != lambdaRoot || doc.ParentID != lambdaParent || doc.Name != "broadcast_delete" {
		t.Errorf("span %+v", doc)
	}
}

func TestAdapterDestructiveCallPendingThenDone(t *testing.T) {
	e := newEnv(t)
	a := e.auditor(t, audit.Config{})
	var seen []string
	probe := adapter.Hooks{
		// Runs inside the handler's stage: the pending row must exist by now.
		BeforeHandle: func(ctx context.Context, call *adapter.Call) error {
			seen = append(seen, str(e.item(t, call.ID), "status"))
			return nil
		},
	}
	fn := newFunction(deleteTool(t, true), adapter.WithAuditor(a), adapter.WithHooks(probe))
	invokeLambda(t, fn, envelope(t, "call-d1", deleteIn{ID: "b-2"}), "Root="+lambdaRoot+";Parent="+lambdaParent+";Sampled=1")
	if len(seen) != 1 || seen[0] != audit.StatusPending {
		t.Errorf("status seen by the handler stage: %v", seen)
	}
	items := e.items(t)
	if len(items) != 1 || str(items[0], "status") != audit.StatusDone {
		t.Fatalf("rows: %v", items)
	}
	if st := a.Stats(); st.Written != 2 || st.Fallbacks != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestAdapterRetriedInvocationOneRow(t *testing.T) {
	e := newEnv(t)
	fn := newFunction(deleteTool(t, true), adapter.WithAuditor(e.auditor(t, audit.Config{})))
	payload := envelope(t, "call-r1", deleteIn{ID: "b-3"})
	invokeLambda(t, fn, payload, "Root="+lambdaRoot+";Parent="+lambdaParent+";Sampled=1")
	invokeLambda(t, fn, payload, "Root="+lambdaRoot+";Parent=aaaaaaaaaaaaaaaa;Sampled=1")
	if items := e.items(t); len(items) != 1 || str(items[0], "status") != audit.StatusDone {
		t.Fatalf("rows: %v", items)
	}
}

func TestAdapterUnsampledAndUntraced(t *testing.T) {
	e := newEnv(t)
	fn := newFunction(deleteTool(t, false), adapter.WithAuditor(e.auditor(t, audit.Config{})))
	invokeLambda(t, fn, envelope(t, "call-unsampled", deleteIn{ID: "b-4"}), "Root="+lambdaRoot+";Parent="+lambdaParent+";Sampled=0")
	invokeLambda(t, fn, envelope(t, "call-untraced", deleteIn{ID: "b-5"}), "")

	untraced := e.item(t, "call-untraced")
	trace, span := str(untraced, "traceId"), str(untraced, "spanId")
	if !traceIDPattern.MatchString(trace) || trace == lambdaRoot {
		t.Errorf("untraced traceId %q", trace)
	}
	if _, ok := untraced["parentSpanId"]; ok {
		t.Errorf("untraced row names a parent")
	}
	doc, err := e.daemon.WaitFor(waitCtx(t), func(d xraystandin.Document) bool { return d.ID == span })
	if err != nil {
		t.Fatal(err)
	}
	if doc.ParentID != "" || doc.Type != "" || doc.TraceID != trace {
		t.Errorf("untraced span %+v", doc)
	}
	// The unsampled call was sent first; had it emitted, it would be here.
	unsampled := e.item(t, "call-unsampled")
	for _, d := range e.daemon.Documents() {
		if d.ID == str(unsampled, "spanId") {
			t.Errorf("unsampled call emitted %+v", d)
		}
	}
	if str(unsampled, "traceId") != lambdaRoot || str(unsampled, "parentSpanId") != lambdaParent || str(unsampled, "spanId") == "" {
		t.Errorf("unsampled row ids: %v", unsampled)
	}
}

// Concurrent calls keeping their own rows: TestIsolationThousandConcurrentCalls
// (isolation_test.go), 1,000 calls each with its own caller, trace and entity.

func TestAdapterUnreachableTableFallbackReplay(t *testing.T) {
	e := newEnv(t)
	var fb bytes.Buffer
	down := e.auditor(t, audit.Config{Client: clientFor("http://" + closedPort(t)), Fallback: &fb})
	fn := newFunction(deleteTool(t, false), adapter.WithAuditor(down))
	invokeLambda(t, fn, envelope(t, "call-f1", deleteIn{ID: "b-6", Fail: true}), "Root="+lambdaRoot+";Parent="+lambdaParent+";Sampled=1")
	if strings.Count(fb.String(), `"mcpfnAuditFallback":1`) != 1 {
		t.Fatalf("fallback: %s", fb.String())
	}
	up := e.auditor(t, audit.Config{})
	for range 2 {
		if _, err := audit.Replay(context.Background(), strings.NewReader(fb.String()), up, "broadcast_delete"); err != nil {
			t.Fatal(err)
		}
	}
	items := e.items(t)
	if len(items) != 1 {
		t.Fatalf("%d rows", len(items))
	}
	it := items[0]
	if str(it, "errorCode") != "INTERNAL_SERVER_ERROR" || !strings.Contains(str(it, "rawError"), "connection refused") {
		t.Errorf("replayed row: %v", it)
	}
}
