package adapter

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

var jsonStringSeeds = []string{
	``, `{"entityId":"w-1"}`, "<>&\"\\/\b\f\n\r\t\x00\x1f\x7f", "é€😀\u2028\u2029", "\xff\xfe", "a\xe2\x80", "\xed\xa0\x80",
}

// TestAppendJSONStringIsEncodingJSON: the text content is byte for byte
// what json.Marshal(string(raw)) writes for valid UTF-8, and for invalid
// UTF-8 the same JSON value (encoding/json writes each bad byte's U+FFFD as
// \ufffd up to Go 1.26, raw from Go 1.27 on; appendJSONString writes the
// escape).
func TestAppendJSONStringIsEncodingJSON(t *testing.T) {
	for _, s := range jsonStringSeeds {
		checkJSONString(t, appendJSONString(nil, []byte(s)), []byte(s))
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range jsonStringSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, s []byte) {
		got := appendJSONString([]byte("x"), s)
		if got[0] != 'x' {
			t.Fatalf("%q: the prefix was overwritten: %s", s, got)
		}
		checkJSONString(t, got[1:], s)
	})
}

// checkJSONString holds got, appendJSONString's output for s, to
// encoding/json: the same bytes for valid UTF-8, else the same value.
func checkJSONString(t *testing.T, got, s []byte) {
	t.Helper()
	want, _ := json.Marshal(string(s))
	if utf8.Valid(s) {
		if !bytes.Equal(got, want) {
			t.Errorf("%q: got %s, want %s", s, got, want)
		}
		return
	}
	var g, w string
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%q: %s is not a JSON string: %v", s, got, err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	if g != w || !utf8.ValidString(g) {
		t.Errorf("%q: got %s (%q), want %s (%q)", s, got, g, want, w)
	}
}
