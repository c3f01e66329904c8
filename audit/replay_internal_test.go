package audit

import (
	"strings"
	"testing"
)

func TestFindFallbackRows(t *testing.T) {
	line := `{"mcpfnAuditFallback":1,"table":"t","row":{"callId":"c1","status":"pending","spanId":"s","startedAt":"2026-11-29T12:00:00Z","argsPreview":"{\"mcpfnAuditFallback\":1}"}}`
	for name, tc := range map[string]struct {
		text  string
		calls []string
	}{
		"raw":       {line, []string{"c1"}},
		"prefixed":  {"2026-11-29T12:00:00.123Z\tabc\tINFO\t" + line, []string{"c1"}},
		"two":       {line + " " + strings.Replace(line, "c1", "c2", 1), []string{"c1", "c2"}},
		"wrapped":   {`{"time":"x","message":` + quote(line) + `}`, []string{"c1"}},
		"twice":     {`{"m":` + quote(`prefix {"inner":`+quote(line)+`}`) + `}`, []string{"c1"}},
		"no row":    {`{"mcpfnAuditFallback":1,"table":"t"}`, nil},
		"no callId": {`{"mcpfnAuditFallback":1,"row":{"tool":"x"}}`, nil},
		"garbage":   {`{{{{ "mcpfnAuditFallback" }}}`, nil},
	} {
		rows := findFallbackRows([]byte(tc.text), 0)
		var got []string
		for _, r := range rows {
			got = append(got, r.CallID)
		}
		if strings.Join(got, ",") != strings.Join(tc.calls, ",") {
			t.Errorf("%s: got %v, want %v", name, got, tc.calls)
		}
	}
}

func quote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(s) + `"`
}

func FuzzFindFallbackRows(f *testing.F) {
	f.Add([]byte(`x {"mcpfnAuditFallback":1,"table":"t","row":{"callId":"c","status":"done"}} y`))
	f.Add([]byte(`{"message":"{\"mcpfnAuditFallback\":1,\"row\":{\"callId\":\"c\"}}"}`))
	f.Add([]byte(`{"mcpfnAuditFallback"{"mcpfnAuditFallback"`))
	f.Fuzz(func(t *testing.T, line []byte) {
		for _, r := range findFallbackRows(line, 0) {
			if r.CallID == "" {
				t.Fatalf("row without callId from %q", line)
			}
		}
	})
}
