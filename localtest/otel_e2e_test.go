package localtest_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/internal/otlpstandin"
)

// readOTLP reads otlp.jsonl: every span the receiver stand-in got, by id.
func readOTLP(t *testing.T) map[string][]otlpstandin.Span {
	t.Helper()
	f, err := os.Open(stack.OTLPPath())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]otlpstandin.Span{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var s otlpstandin.Span
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("otlp.jsonl: %v: %s", err, sc.Text())
		}
		out[s.SpanID] = append(out[s.SpanID], s)
	}
	return out
}

// countSegments counts the X-Ray documents (subsegments included) of
// xray.jsonl by trace/id.
func countSegments(t *testing.T) map[string]int {
	t.Helper()
	b, err := os.ReadFile(stack.XRayPath())
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	var add func(s segment, trace string)
	add = func(s segment, trace string) {
		if s.TraceID == "" {
			s.TraceID = trace
		}
		n[s.TraceID+"/"+s.ID]++
		for _, c := range s.Subsegments {
			add(c, s.TraceID)
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var s segment
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("xray.jsonl: %v", err)
		}
		add(s, "")
	}
	return n
}

// checkOTLP asserts that with MCPFN_TRACING=both (the local stack's
// setting) every row has exactly one X-Ray document and exactly one OTLP
// span, both with the row's ids (trace id in each one's spelling), and that
// the row's parent — the gateway's forward — is one OTLP span too. OTLP
// spans are exported before a function answers, so they are read at once;
// X-Ray's UDP documents were waited for by checkSpans. Without the tag
// mcpfn_otel (the default build) the stack traces to X-Ray only, and only
// the documents are checked.
func checkOTLP(t *testing.T, rows []audit.Row) {
	t.Helper()
	spans, segs := readOTLP(t), countSegments(t)
	for _, r := range rows {
		if n := segs[r.TraceID+"/"+r.SpanID]; n != 1 {
			t.Errorf("row %s: %d X-Ray documents, want 1", r.CallID, n)
		}
		if !audit.OTelBuilt {
			continue
		}
		got := spans[r.SpanID]
		if len(got) != 1 {
			t.Errorf("row %s: %d OTLP spans with id %s, want 1", r.CallID, len(got), r.SpanID)
			continue
		}
		s := got[0]
		if s.TraceID != audit.W3CTraceID(r.TraceID) || s.ParentSpanID != r.ParentSpanID || s.Attributes["mcpfn.call.id"] != r.CallID {
			t.Errorf("row %s (trace %s parent %s): OTLP span trace %s parent %s call %v", r.CallID, r.TraceID, r.ParentSpanID, s.TraceID, s.ParentSpanID, s.Attributes["mcpfn.call.id"])
		}
		if fwd := spans[r.ParentSpanID]; len(fwd) != 1 || fwd[0].TraceID != s.TraceID || fwd[0].Kind != "client" {
			t.Errorf("row %s: the gateway's forward span %s in OTLP: %+v", r.CallID, r.ParentSpanID, fwd)
		}
	}
}

// A client's traceparent in _meta (SEP-414) roots the chain: the gateway's
// forward span is its child, the function's span the forward's, all in the
// client's trace, in rows, X-Ray documents and OTLP spans alike.
func TestClientTraceparentRootsTheChain(t *testing.T) {
	cs := connect(t, unique("e2e-tp"))
	clientTrace, clientSpan := audit.W3CTraceID(audit.NewTraceID(time.Now())), audit.NewSpanID()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "broadcast_create",
		Arguments: map[string]any{"channel": unique("tp"), "text": "traced"},
		Meta:      mcp.Meta{"traceparent": "00-" + clientTrace + "-" + clientSpan + "-01"}})
	if err != nil || res.IsError {
		t.Fatalf("%v %v", err, res)
	}
	id, _ := res.StructuredContent.(map[string]any)["id"].(string)
	rows, err := auditor().EntityRows(t.Context(), "entityId", id, audit.QueryOptions{})
	if err != nil || len(rows) != 1 {
		t.Fatalf("rows %v (%v)", rows, err)
	}
	r := rows[0]
	if r.TraceID != audit.XRayTraceID(clientTrace) {
		t.Fatalf("row trace %s, want the client's %s", r.TraceID, audit.XRayTraceID(clientTrace))
	}
	checkOTLP(t, rows)
	if !audit.OTelBuilt {
		return // no OTLP spans in the default build (go test -tags mcpfn_otel)
	}
	fwd := readOTLP(t)[r.ParentSpanID]
	if len(fwd) != 1 || fwd[0].ParentSpanID != clientSpan {
		t.Fatalf("forward span %+v: want the client's span %s as parent", fwd, clientSpan)
	}
}
