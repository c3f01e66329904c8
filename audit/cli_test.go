package audit_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/audit"
)

// A gateway row (root: its parent is the Lambda segment, not a row), two
// tool calls under it, one nested call under the first, and a row whose
// parent is not in the set (shown as a root, never dropped).
func treeRows() []audit.Row {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	row := func(call, tool, span, parent string, at time.Duration, ok bool, code string) audit.Row {
		return audit.Row{CallID: call, Tool: tool, SpanID: span, ParentSpanID: parent, TraceID: "1-5f84c7a1-aaaaaaaaaaaaaaaaaaaaaaaa",
			StartedAt: t0.Add(at), DurationMs: 5, OK: ok, ErrorCode: code, Status: audit.StatusDone}
	}
	return []audit.Row{
		row("c-get", "broadcast_get", "2222222222222222", "1111111111111111", 20*time.Millisecond, false, "NOT_FOUND"),
		row("c-gw", "gateway", "1111111111111111", "00000000000000aa", 0, true, ""),
		row("c-create", "broadcast_create", "3333333333333333", "1111111111111111", 10*time.Millisecond, true, ""),
		row("c-nested", "broadcast_list", "4444444444444444", "3333333333333333", 12*time.Millisecond, true, ""),
		row("c-orphan", "broadcast_delete", "5555555555555555", "ffffffffffffffff", 30*time.Millisecond, true, ""),
	}
}

const wantTree = `trace 1-5f84c7a1-aaaaaaaaaaaaaaaaaaaaaaaa (5 rows)
├─ 2026-11-29T12:00:00.000Z gateway ok 5.0ms span=1111111111111111 call=c-gw parent=00000000000000aa
│  ├─ 2026-11-29T12:00:00.010Z broadcast_create ok 5.0ms span=3333333333333333 call=c-create parent=1111111111111111
│  │  └─ 2026-11-29T12:00:00.012Z broadcast_list ok 5.0ms span=4444444444444444 call=c-nested parent=3333333333333333
│  └─ 2026-11-29T12:00:00.020Z broadcast_get error NOT_FOUND 5.0ms span=2222222222222222 call=c-get parent=1111111111111111
└─ 2026-11-29T12:00:00.030Z broadcast_delete ok 5.0ms span=5555555555555555 call=c-orphan parent=ffffffffffffffff
`

func TestWriteTraceTree(t *testing.T) {
	var b bytes.Buffer
	if err := audit.WriteTraceTree(&b, "1-5f84c7a1-aaaaaaaaaaaaaaaaaaaaaaaa", treeRows()); err != nil {
		t.Fatal(err)
	}
	if b.String() != wantTree {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), wantTree)
	}
}

func TestCLI(t *testing.T) {
	e := newEnv(t)
	a := e.auditor(t, audit.Config{})
	ctx := context.Background()
	for _, r := range treeRows() {
		a.Record(ctx, &r)
	}
	run := func(stdin string, args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := audit.RunCLI(ctx, append([]string{"-table", e.table}, args...), strings.NewReader(stdin), &out, &errb, e.client)
		return out.String(), errb.String(), code
	}
	out, stderr, code := run("", "trace", "1-5f84c7a1-aaaaaaaaaaaaaaaaaaaaaaaa")
	if code != 0 || out != wantTree {
		t.Errorf("trace: code %d, stderr %s, got:\n%s", code, stderr, out)
	}

	other := baseRow("c-entity")
	a.Record(ctx, other)
	out, _, code = run("", "entity", "entityId", "b-1")
	if code != 0 || !strings.Contains(out, "call=c-entity") || strings.Count(out, "\n") != 1 {
		t.Errorf("entity: code %d:\n%s", code, out)
	}
	out, _, code = run("", "-json", "-auth", "jwt", "-issuer", "https://issuer.example", "-tenant", "acme", "caller", "user-1")
	if code != 0 || !strings.Contains(out, `"callId":"c-entity"`) {
		t.Errorf("caller: code %d:\n%s", code, out)
	}
	// Another issuer's user-1 is someone else.
	out, _, code = run("", "-issuer", "https://other.example", "-tenant", "acme", "caller", "user-1")
	if code != 0 || out != "" {
		t.Errorf("caller of another issuer: code %d:\n%s", code, out)
	}
	// A listing names the caller by key; callerkey takes it back.
	key := "jwt#https://issuer.example#acme#user-1"
	out, _, code = run("", "callerkey", key)
	if code != 0 || !strings.Contains(out, "call=c-entity") || !strings.Contains(out, " caller="+key+" ") {
		t.Errorf("callerkey: code %d:\n%s", code, out)
	}

	var fb bytes.Buffer
	down := e.auditor(t, audit.Config{Client: clientFor("http://" + closedPort(t)), Fallback: &fb, MaxAttempts: 1})
	down.Record(ctx, baseRow("c-replayed"))
	out, stderr, code = run("2026-11-29T12:00:00.000Z\t7c1d\tINFO\t"+fb.String(), "replay", "-")
	if code != 0 || !strings.Contains(out, "found=1 written=1") {
		t.Errorf("replay: code %d, stderr %s:\n%s", code, stderr, out)
	}
	if _, _, code = run("", "bogus"); code != 2 {
		t.Errorf("bogus command: code %d", code)
	}
}
