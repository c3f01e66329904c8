package audit_test

import (
	"fmt"
	"os"
	"time"

	"github.com/mcpfn/mcpfn/audit"
)

func ExampleSanitizeArgs() {
	preview, truncated := audit.SanitizeArgs([]byte(`{
		"channel": "ops",
		"apiKey": "sk-live-123",
		"auth": {"user": "u", "pass": "p"},
		"headers": {"X-Api-Key": "k", "Accept": "application/json"},
		"maxTokens": 512
	}`))
	fmt.Println(preview, truncated)
	// Output: {"channel":"ops","apiKey":"[redacted]","auth":"[redacted]","headers":{"X-Api-Key":"[redacted]","Accept":"application/json"},"maxTokens":512} false
}

func ExampleWriteTraceTree() {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	rows := []audit.Row{
		{CallID: "c-2", Tool: "broadcast_get", SpanID: "bbbbbbbbbbbbbbbb", ParentSpanID: "aaaaaaaaaaaaaaaa", StartedAt: t0.Add(time.Millisecond), OK: true, DurationMs: 3},
		{CallID: "c-1", Tool: "broadcast_create", SpanID: "aaaaaaaaaaaaaaaa", ParentSpanID: "53995c3f42cd8ad8", StartedAt: t0, OK: true, DurationMs: 9},
	}
	_ = audit.WriteTraceTree(os.Stdout, "1-5f84c7a1-0123456789abcdef01234567", rows)
	// Output:
	// trace 1-5f84c7a1-0123456789abcdef01234567 (2 rows)
	// └─ 2026-11-29T12:00:00.000Z broadcast_create ok 9.0ms span=aaaaaaaaaaaaaaaa call=c-1 parent=53995c3f42cd8ad8
	//    └─ 2026-11-29T12:00:00.001Z broadcast_get ok 3.0ms span=bbbbbbbbbbbbbbbb call=c-2 parent=aaaaaaaaaaaaaaaa
}
