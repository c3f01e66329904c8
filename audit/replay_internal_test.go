package audit

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestParseFallbackLine (L8): a fallback object is a row only where a
// fallback line can stand — the whole line, the whole line after a log
// prefix, the whole message of a structured log line — never embedded in
// other text or in some other field, where a tool's own output could have
// put it.
func TestParseFallbackLine(t *testing.T) {
	line := `{"mcpfnAuditFallback":1,"table":"t","row":{"callId":"c1","status":"pending","spanId":"s","startedAt":"2026-11-29T12:00:00Z","argsPreview":"{\"mcpfnAuditFallback\":1}"}}`
	other := strings.Replace(line, "c1", "c2", 1)
	for name, tc := range map[string]struct {
		text  string
		calls []string
	}{
		// Accepted.
		"raw":             {line, []string{"c1"}},
		"blanks":          {"  " + line + " \r", []string{"c1"}},
		"lambda text":     {"2026-11-29T12:00:00.123Z\t7c1d2e3f-aaaa-bbbb-cccc-0123456789ab\tINFO\t" + line, []string{"c1"}},
		"logs tail short": {"2026-11-29T12:00:00 " + line, []string{"c1"}},
		"logs tail long":  {"2026-11-29T12:00:00.123000+00:00 2026/11/29/[$LATEST]0123abcd " + line, []string{"c1"}},
		"json message":    {`{"time":"x","type":"function","message":` + quote(line) + `}`, []string{"c1"}},
		"message object":  {`{"time":"x","message":` + line + `}`, []string{"c1"}},
		"prefixed json":   {"2026-11-29T12:00:00Z " + `{"message":` + quote(line) + `}`, []string{"c1"}},
		"subscription":    {`{"messageType":"DATA_MESSAGE","logEvents":[{"id":"1","message":` + quote(line) + `},{"id":"2","message":"hello"},{"id":"3","message":` + quote(other) + `}]}`, []string{"c1", "c2"}},
		// Refused: the object is not the whole line or the whole message.
		"text before":      {"result: " + line, nil},
		"go log prefix":    {"2026/11/29 12:00:00 " + line, nil},
		"text after":       {line + " trailing", nil},
		"two on a line":    {line + " " + other, nil},
		"other field":      {`{"time":"x","output":` + quote(line) + `}`, nil},
		"message embedded": {`{"message":` + quote("tool said: "+line) + `}`, nil},
		"nested wrapper":   {`{"m":` + quote(`{"message":`+quote(line)+`}`) + `}`, nil},
		"twice wrapped":    {`{"message":` + quote(`{"message":`+quote(line)+`}`) + `}`, nil},
		"in an argument":   {`{"mcpfnAuditFallback":1,"row":{"callId":"outer","argsPreview":` + quote(line) + `}} x`, nil},
		"no row":           {`{"mcpfnAuditFallback":1,"table":"t"}`, nil},
		"no callId":        {`{"mcpfnAuditFallback":1,"row":{"tool":"x"}}`, nil},
		"garbage":          {`{{{{ "mcpfnAuditFallback" }}}`, nil},
	} {
		var got []string
		for _, r := range parseFallbackLine([]byte(tc.text)) {
			got = append(got, r.CallID)
		}
		if strings.Join(got, ",") != strings.Join(tc.calls, ",") {
			t.Errorf("%s: got %v, want %v", name, got, tc.calls)
		}
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// FuzzParseFallbackLine: parsing never panics; a line either yields no row
// or rows with a call id whose re-encoding as a fallback line parses back
// to the same row, byte for byte.
func FuzzParseFallbackLine(f *testing.F) {
	f.Add([]byte(`{"mcpfnAuditFallback":1,"table":"t","row":{"callId":"c","status":"done"}}`))
	f.Add([]byte(`2026-11-29T12:00:00.123Z	abc	INFO	{"mcpfnAuditFallback":1,"row":{"callId":"c","errorDetails":[1,{"a":"b"}],"dimensions":{"k":"v"}}}`))
	f.Add([]byte(`{"message":"{\"mcpfnAuditFallback\":1,\"row\":{\"callId\":\"c\"}}"}`))
	f.Add([]byte(`{"logEvents":[{"message":"{\"mcpfnAuditFallback\":1,\"row\":{\"callId\":\"c\",\"startedAt\":\"2026-11-29T12:00:00+02:00\"}}"}]}`))
	f.Add([]byte(`x {"mcpfnAuditFallback":1,"row":{"callId":"c"}}`))
	f.Add([]byte(`{"mcpfnAuditFallback"{"mcpfnAuditFallback"`))
	f.Fuzz(func(t *testing.T, line []byte) {
		for _, r := range parseFallbackLine(line) {
			if r.CallID == "" || r.Status == "" {
				t.Fatalf("row without callId or status from %q", line)
			}
			enc, err := json.Marshal(fallbackLine{Marker: 1, Table: "t", Row: r})
			if err != nil {
				continue // a row json cannot encode is never written either
			}
			again := parseFallbackLine(enc)
			if len(again) != 1 {
				t.Fatalf("re-encoded row %s parsed to %d rows", enc, len(again))
			}
			enc2, _ := json.Marshal(fallbackLine{Marker: 1, Table: "t", Row: again[0]})
			if !bytes.Equal(enc, enc2) {
				t.Fatalf("round trip changed the row:\n%s\n%s", enc, enc2)
			}
		}
	})
}
