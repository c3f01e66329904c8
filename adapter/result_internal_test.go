package adapter

import (
	"bytes"
	"encoding/json"
	"testing"
)

var jsonStringSeeds = []string{
	``, `{"entityId":"w-1"}`, "<>&\"\\/\b\f\n\r\t\x00\x1f\x7f", "é€😀\u2028\u2029", "\xff\xfe", "a\xe2\x80", "\xed\xa0\x80",
}

// TestAppendJSONStringIsEncodingJSON: the text content is byte for byte
// what json.Marshal(string(raw)) wrote before.
func TestAppendJSONStringIsEncodingJSON(t *testing.T) {
	for _, s := range jsonStringSeeds {
		want, _ := json.Marshal(s)
		if got := appendJSONString(nil, []byte(s)); !bytes.Equal(got, want) {
			t.Errorf("%q: got %s, want %s", s, got, want)
		}
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range jsonStringSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, s []byte) {
		want, _ := json.Marshal(string(s))
		if got := appendJSONString([]byte("x"), s); !bytes.Equal(got[1:], want) {
			t.Fatalf("%q: got %s, want %s", s, got[1:], want)
		}
	})
}
