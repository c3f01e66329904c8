package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/internal/xraystandin"
)

var traceIDPattern = regexp.MustCompile(`^1-[0-9a-f]{8}-[0-9a-f]{24}$`)

func baseRow(callID string) *audit.Row {
	return &audit.Row{
		CallID:           callID,
		Tool:             "broadcast_delete",
		Source:           "envelope",
		MCPEra:           "modern",
		TraceID:          "1-5f84c7a1-7b0c1f9d3e2a4b5c6d7e8f90",
		ParentSpanID:     "53995c3f42cd8ad8",
		SpanID:           audit.NewSpanID(),
		Sampled:          "1",
		StartedAt:        time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC),
		DurationMs:       12.5,
		OK:               true,
		CallerSubject:    "user-1",
		CallerAuthMethod: "jwt",
		CallerIssuer:     "https://issuer.example",
		Tenant:           "acme",
		Arguments:        json.RawMessage(`{"id":"b-1","password":"hunter2","nested":{"apiKey":"k","keep":"v"}}`),
		Dimensions:       map[string]string{"entityId": "b-1"},
		LambdaRequestID:  "req-1",
	}
}

func TestRecordWritesRowAndSubsegment(t *testing.T) {
	e := newEnv(t)
	var fb bytes.Buffer
	a := e.auditor(t, audit.Config{Fallback: &fb})
	row := baseRow("call-1")
	a.Record(context.Background(), row)

	items := e.items(t)
	if len(items) != 1 {
		t.Fatalf("%d rows, want 1", len(items))
	}
	it := items[0]
	for name, want := range map[string]string{
		"callId": "call-1", "status": audit.StatusDone, "tool": "broadcast_delete",
		"traceId": row.TraceID, "parentSpanId": row.ParentSpanID, "spanId": row.SpanID,
		"startedAt": "2026-11-29T12:00:00.000000000Z", "callerKey": "jwt#https://issuer.example#acme#user-1", "callerIssuer": "https://issuer.example", "entityKey": "entityId#b-1",
		"argsPreview": `{"id":"b-1","password":"[redacted]","nested":{"apiKey":"[redacted]","keep":"v"}}`,
	} {
		if got := str(it, name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if n, ok := it["expiresAt"].(*types.AttributeValueMemberN); !ok || n.Value != fmt.Sprint(row.StartedAt.Add(audit.DefaultTTL).Unix()) {
		t.Errorf("expiresAt = %v", it["expiresAt"])
	}
	if fb.Len() != 0 {
		t.Errorf("fallback written: %s", fb.String())
	}

	doc, err := e.daemon.WaitFor(waitCtx(t), func(d xraystandin.Document) bool { return d.ID == row.SpanID })
	if err != nil {
		t.Fatal(err)
	}
	if doc.Type != "subsegment" || doc.TraceID != row.TraceID || doc.ParentID != row.ParentSpanID || doc.Name != row.Tool {
		t.Errorf("span = %+v", doc)
	}
	if doc.Annotations["tool"] != row.Tool || doc.Annotations["outcome"] != "ok" || doc.Annotations["era"] != "modern" {
		t.Errorf("annotations = %v", doc.Annotations)
	}
	if got, want := doc.EndTime-doc.StartTime, 0.0125; got < want-1e-6 || got > want+1e-6 {
		t.Errorf("span duration %v, want %v", got, want)
	}
	if st := a.Stats(); st.Written != 1 || st.Attempts != 1 || st.Fallbacks != 0 {
		t.Errorf("stats = %+v", st)
	}
}

func TestRetriedRecordLeavesOneRow(t *testing.T) {
	e := newEnv(t)
	a := e.auditor(t, audit.Config{})
	first := baseRow("call-retry")
	a.Record(context.Background(), first)
	// The retried invocation rebuilds its row: same call id, new span.
	again := baseRow("call-retry")
	again.OK, again.ErrorCode = false, "TIMEOUT"
	a.Record(context.Background(), again)

	items := e.items(t)
	if len(items) != 1 {
		t.Fatalf("%d rows, want 1", len(items))
	}
	if got := str(items[0], "spanId"); got != first.SpanID {
		t.Errorf("spanId %s, want the first attempt's %s", got, first.SpanID)
	}
	if st := a.Stats(); st.Written != 1 || st.Duplicates != 1 || st.Fallbacks != 0 {
		t.Errorf("stats = %+v", st)
	}
}

func TestPendingThenFinalLeavesOneFinalRow(t *testing.T) {
	e := newEnv(t)
	a := e.auditor(t, audit.Config{})
	ctx := context.Background()

	pending := baseRow("call-destructive")
	pending.Destructive = true
	a.Pending(ctx, pending)
	if got := str(e.item(t, "call-destructive"), "status"); got != audit.StatusPending {
		t.Fatalf("after Pending: status %q", got)
	}
	// The adapter builds the final row afresh, as here, with the pending
	// row's attempt id: only that attempt may complete it.
	final := baseRow("call-destructive")
	final.Destructive = true
	final.SpanID = pending.SpanID
	final.AttemptID = pending.AttemptID
	final.DurationMs = 40
	a.Record(ctx, final)

	items := e.items(t)
	if len(items) != 1 {
		t.Fatalf("%d rows, want 1", len(items))
	}
	if got := str(items[0], "status"); got != audit.StatusDone {
		t.Errorf("status %q, want done", got)
	}
	// A late pending write (a replayed log, a slow retry) never reverts it.
	a.Pending(ctx, baseRow("call-destructive"))
	if got := str(e.item(t, "call-destructive"), "status"); got != audit.StatusDone {
		t.Errorf("after late Pending: status %q, want done", got)
	}
	if st := a.Stats(); st.Written != 2 || st.Duplicates != 1 || st.Fallbacks != 0 {
		t.Errorf("stats = %+v", st)
	}
}

func TestUnsampledEmitsNothingButKeepsIDs(t *testing.T) {
	e := newEnv(t)
	a := e.auditor(t, audit.Config{})
	un := baseRow("call-unsampled")
	un.Sampled = "0"
	a.Record(context.Background(), un)
	// A sampled call through the same emitter afterwards: once its span has
	// arrived, the unsampled one would have too.
	sentinel := baseRow("call-sentinel")
	a.Record(context.Background(), sentinel)
	if _, err := e.daemon.WaitFor(waitCtx(t), func(d xraystandin.Document) bool { return d.ID == sentinel.SpanID }); err != nil {
		t.Fatal(err)
	}
	for _, d := range e.daemon.Documents() {
		if d.ID == un.SpanID {
			t.Errorf("unsampled call emitted %+v", d)
		}
	}
	it := e.item(t, "call-unsampled")
	if str(it, "spanId") != un.SpanID || str(it, "traceId") != un.TraceID || str(it, "parentSpanId") != un.ParentSpanID {
		t.Errorf("row lost its ids: %v", it)
	}
}

func TestNoTraceHeaderMintsRootSegment(t *testing.T) {
	e := newEnv(t)
	a := e.auditor(t, audit.Config{})
	row := baseRow("call-untraced")
	row.TraceID, row.Sampled = "", ""
	row.ParentSpanID = "0123456789abcdef" // a parent without a trace must not survive
	a.Record(context.Background(), row)

	it := e.item(t, "call-untraced")
	trace := str(it, "traceId")
	if !traceIDPattern.MatchString(trace) {
		t.Fatalf("traceId %q", trace)
	}
	if _, ok := it["parentSpanId"]; ok {
		t.Errorf("row names a parent: %v", it["parentSpanId"])
	}
	doc, err := e.daemon.WaitFor(waitCtx(t), func(d xraystandin.Document) bool { return d.ID == row.SpanID })
	if err != nil {
		t.Fatal(err)
	}
	if doc.Type != "" || doc.ParentID != "" || doc.TraceID != trace {
		t.Errorf("want a root segment of %s, got %+v", trace, doc)
	}
}

func TestHugeRowIsCappedAndAccepted(t *testing.T) {
	e := newEnv(t)
	var fb bytes.Buffer
	a := e.auditor(t, audit.Config{Fallback: &fb})
	row := baseRow("call-huge")
	row.Arguments = json.RawMessage(`{"blob":"` + strings.Repeat("é", 512<<10) + `"}`) // 1 MB
	row.OK, row.ErrorCode = false, "INTERNAL_SERVER_ERROR"
	row.ErrorMessage = strings.Repeat("m", 1<<20)
	row.RawError = strings.Repeat("r", 1<<20)
	row.ErrorDetails = json.RawMessage(`{"x":"` + strings.Repeat("d", 1<<20) + `"}`)
	row.Dimensions = map[string]string{"entityId": "b-huge"}
	for i := range 500 {
		row.Dimensions[fmt.Sprintf("dim%03d-%s", i, strings.Repeat("k", 200))] = strings.Repeat("v", 10<<10)
	}
	a.Record(context.Background(), row)
	if fb.Len() != 0 {
		t.Fatalf("fallback: %.300s", fb.String())
	}
	it := e.item(t, "call-huge")
	preview := str(it, "argsPreview")
	if len(preview) > audit.PreviewLimit || !strings.HasPrefix(preview, `{"blob":"éé`) {
		t.Errorf("preview %d bytes: %.40s", len(preview), preview)
	}
	if b, ok := it["argsTruncated"].(*types.AttributeValueMemberBOOL); !ok || !b.Value {
		t.Errorf("argsTruncated = %v", it["argsTruncated"])
	}
	if str(it, "entityKey") != "entityId#b-huge" {
		t.Errorf("entityKey %q", str(it, "entityKey"))
	}
	if !json.Valid([]byte(str(it, "errorDetails"))) {
		t.Errorf("errorDetails not JSON")
	}
}

func TestConcurrentRecordsKeepTheirOwnEntities(t *testing.T) {
	e := newEnv(t)
	// 200 PutItems at once queue up in DynamoDB Local on a small machine for
	// longer than the default 2 s attempt timeout; a timed-out attempt that
	// landed anyway shows up as a duplicate on retry, which is correct but
	// not what this test is about.
	a := e.auditor(t, audit.Config{AttemptTimeout: 30 * time.Second})
	start := time.Now()
	const n = 200
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			row := baseRow(fmt.Sprintf("call-%03d", i))
			row.SpanID = ""
			row.Arguments = json.RawMessage(fmt.Sprintf(`{"id":"b-%03d"}`, i))
			row.Dimensions = map[string]string{"entityId": fmt.Sprintf("b-%03d", i)}
			a.Record(context.Background(), row)
		})
	}
	wg.Wait()
	t.Logf("%d concurrent Records took %v", n, time.Since(start))
	items := e.items(t)
	if len(items) != n {
		t.Fatalf("%d rows, want %d", len(items), n)
	}
	spans := map[string]bool{}
	for _, it := range items {
		id := strings.TrimPrefix(str(it, "callId"), "call-")
		if got, want := str(it, "entityKey"), "entityId#b-"+id; got != want {
			t.Errorf("call-%s: entityKey %q, want %q", id, got, want)
		}
		if got, want := str(it, "argsPreview"), `{"id":"b-`+id+`"}`; got != want {
			t.Errorf("call-%s: preview %q, want %q", id, got, want)
		}
		spans[str(it, "spanId")] = true
	}
	if len(spans) != n {
		t.Errorf("%d distinct span ids, want %d", len(spans), n)
	}
	rows, err := a.EntityRows(context.Background(), "entityId", "b-042", audit.QueryOptions{})
	if err != nil || len(rows) != 1 || rows[0].CallID != "call-042" {
		t.Errorf("EntityRows(b-042) = %v, %v", rows, err)
	}
	if st := a.Stats(); st.Written != n || st.Fallbacks != 0 {
		t.Errorf("stats = %+v", st)
	}
}

func TestQueriesByTraceAndCaller(t *testing.T) {
	e := newEnv(t)
	a := e.auditor(t, audit.Config{})
	ctx := context.Background()
	for i, who := range []string{"alice", "bob", "alice"} {
		row := baseRow(fmt.Sprintf("q-%d", i))
		row.CallerSubject = who
		row.StartedAt = row.StartedAt.Add(time.Duration(i) * time.Second)
		a.Record(ctx, row)
	}
	other := baseRow("q-other-trace")
	other.TraceID = "1-5f84c7a1-000000000000000000000000"
	a.Record(ctx, other)

	rows, err := a.TraceRows(ctx, baseRow("").TraceID)
	if err != nil || len(rows) != 3 || rows[0].CallID != "q-0" || rows[2].CallID != "q-2" {
		t.Fatalf("TraceRows = %v, %v", rows, err)
	}
	if !rows[1].StartedAt.Equal(baseRow("").StartedAt.Add(time.Second)) {
		t.Errorf("startedAt round trip: %v", rows[1].StartedAt)
	}
	rows, err = a.CallerRows(ctx, audit.Caller{AuthMethod: "jwt", Issuer: "https://issuer.example", Tenant: "acme", Subject: "alice"}, audit.QueryOptions{Newest: true})
	if err != nil || len(rows) != 2 || rows[0].CallID != "q-2" {
		t.Fatalf("CallerRows = %v, %v", rows, err)
	}
	rows, err = a.CallerKeyRows(ctx, "jwt#https://issuer.example#acme#alice", audit.QueryOptions{Since: baseRow("").StartedAt.Add(time.Second)})
	if err != nil || len(rows) != 1 || rows[0].CallID != "q-2" {
		t.Fatalf("CallerRows since = %v, %v", rows, err)
	}
}

// TestPendingReportsTheEarlierAttempt: a second attempt's Pending writes
// nothing and returns the row that is there; the same attempt's Pending sent
// again (its first answer lost) is its own write, not a conflict.
func TestPendingReportsTheEarlierAttempt(t *testing.T) {
	e := newEnv(t)
	a := e.auditor(t, audit.Config{})
	ctx := context.Background()

	first := baseRow("call-twice")
	if prior, err := a.Pending(ctx, first); prior != nil || err != nil {
		t.Fatalf("first Pending: %v, %v", prior, err)
	}
	again := baseRow("call-twice")
	again.AttemptID = first.AttemptID
	if prior, err := a.Pending(ctx, again); prior != nil || err != nil {
		t.Fatalf("the same attempt's Pending sent again: %v, %v", prior, err)
	}
	before := e.item(t, "call-twice")
	second := baseRow("call-twice")
	prior, err := a.Pending(ctx, second)
	if err != nil || prior == nil {
		t.Fatalf("second attempt's Pending: %v, %v", prior, err)
	}
	if prior.Status != audit.StatusPending || prior.AttemptID != first.AttemptID || !prior.StartedAt.Equal(first.StartedAt) {
		t.Errorf("prior = %+v", prior)
	}
	// The second attempt's final row does not complete the first's.
	final := baseRow("call-twice")
	final.AttemptID = second.AttemptID
	a.Record(ctx, final)
	if after := e.item(t, "call-twice"); !reflect.DeepEqual(before, after) {
		t.Errorf("another attempt's final row changed the row:\nbefore %v\nafter  %v", before, after)
	}
}

// TestLateOutcomeIsAddedToItsOwnAttemptsRow: Late adds lateOutcome and
// finishedAt to the final row of its own attempt, once, and to no other.
func TestLateOutcomeIsAddedToItsOwnAttemptsRow(t *testing.T) {
	e := newEnv(t)
	a := e.auditor(t, audit.Config{})
	ctx := context.Background()
	row := baseRow("call-late")
	if _, err := a.Pending(ctx, row); err != nil {
		t.Fatal(err)
	}
	final := baseRow("call-late")
	final.AttemptID, final.Outcome, final.ErrorCode = row.AttemptID, audit.OutcomeUnknown, "TIMEOUT"
	a.Record(ctx, final)

	a.Late(ctx, &audit.Row{CallID: "call-late", AttemptID: "another-attempt", LateOutcome: "error"})
	finished := time.Date(2026, 12, 1, 1, 2, 3, 4, time.UTC)
	a.Late(ctx, &audit.Row{CallID: "call-late", AttemptID: row.AttemptID, LateOutcome: "ok", FinishedAt: &finished})
	a.Late(ctx, &audit.Row{CallID: "call-late", AttemptID: row.AttemptID, LateOutcome: "error"})

	it := e.item(t, "call-late")
	if str(it, "lateOutcome") != "ok" || str(it, "finishedAt") != finished.Format(audit.StartedAtLayout) ||
		str(it, "outcome") != audit.OutcomeUnknown || str(it, "status") != audit.StatusDone || str(it, "errorCode") != "TIMEOUT" {
		t.Errorf("row: %v", it)
	}
	if st := a.Stats(); st.Fallbacks != 0 {
		t.Errorf("stats %+v", st)
	}
}
