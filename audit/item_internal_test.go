package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// hostileRow has every field at its worst: long, and made of control
// characters that JSON escapes sixfold.
func hostileRow() *Row {
	ctl := func(n int) string { return strings.Repeat("\x01", n) }
	r := &Row{CallID: "c-hostile", TraceID: ctl(5000), SpanID: ctl(5000), StartedAt: time.Now()}
	for _, p := range []*string{&r.Tool, &r.Source, &r.ClientName, &r.CallerUserAgent, &r.CallerSubject, &r.Tenant,
		&r.SessionID, &r.FunctionName, &r.LambdaRequestID, &r.ErrorCode, &r.Stage, &r.LinkedTraceparent} {
		*p = ctl(1 << 20)
	}
	r.ErrorMessage, r.RawError = ctl(1<<20), ctl(1<<20)
	r.ErrorDetails, _ = json.Marshal(ctl(1 << 20))
	r.Arguments, _ = json.Marshal(map[string]string{"x": ctl(1 << 20)})
	r.Dimensions = map[string]string{"entityId": ctl(5000)}
	for i := range 100 {
		r.Dimensions[fmt.Sprintf("%03d%s", i, ctl(500))] = ctl(5000)
	}
	return r
}

func TestWorstRowFitsDynamoDBAndALogEvent(t *testing.T) {
	var fb bytes.Buffer
	a := New(Config{Table: "t", Fallback: &fb})
	r := hostileRow()
	a.prepare(r, StatusDone)
	item := itemFor(r, a.cfg.EntityDimension)
	if n := itemSize(item); n > 200<<10 {
		t.Errorf("item %d bytes", n)
	}
	a.fallback(r, errors.New("down"))
	if n := fb.Len(); n > maxFallbackLine+1 {
		t.Errorf("fallback line %d bytes", n)
	}
	rows := parseFallbackLine(fb.Bytes())
	if len(rows) != 1 || rows[0].CallID != "c-hostile" || rows[0].SpanID != r.SpanID || rows[0].Dimensions["entityId"] == "" {
		t.Errorf("line does not replay: %d rows", len(rows))
	}
}

func TestNoClientFallsBack(t *testing.T) {
	var fb bytes.Buffer
	a := New(Config{Table: "t", Fallback: &fb})
	a.Record(t.Context(), &Row{CallID: "c"})
	if !strings.Contains(fb.String(), `"mcpfnAuditFallback":1`) || !strings.Contains(fb.String(), "no DynamoDB client") {
		t.Errorf("fallback: %s", fb.String())
	}
}

// BenchmarkPrepareAndMarshal is Record's CPU work before the network: ids,
// sanitizing ~1 KB of arguments, caps, and the DynamoDB item.
func BenchmarkPrepareAndMarshal(b *testing.B) {
	a := New(Config{Table: "t"})
	args := json.RawMessage(`{"channel":"ops-announcements","text":"` + strings.Repeat("Deploy window moves to 14:00 UTC. ", 16) +
		`","options":{"notify":true,"priority":3,"apiKey":"sk-live-0123456789","tags":["deploy","ops","weekly"]},` +
		`"recipients":[{"id":"u-1","name":"Ada"},{"id":"u-2","name":"Grace"},{"id":"u-3","name":"Barbara"}]}`)
	b.ReportAllocs()
	for b.Loop() {
		r := &Row{CallID: "c", Tool: "broadcast_create", Source: "envelope", TraceID: "1-5f84c7a1-0123456789abcdef01234567",
			ParentSpanID: "53995c3f42cd8ad8", Sampled: "1", StartedAt: time.Now(), OK: true, CallerSubject: "user-1",
			Arguments: args, Dimensions: map[string]string{"entityId": "b-1"}}
		a.prepare(r, StatusDone)
		_ = itemFor(r, a.cfg.EntityDimension)
	}
}
