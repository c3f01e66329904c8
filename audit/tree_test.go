package audit_test

import (
	"bytes"
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
