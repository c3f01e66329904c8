package calltoken

import (
	"bytes"
	"testing"
)

var canonicalSeeds = []string{
	`{}`, `[]`, `{"a":1}`, `{"a":1,"b":[1,2.50,-0.5e+3,true,false,null,{}]}`, `{"b":1,"a":2}`,
	`{"a":1,"a":2}`, `{"a":"<"}`, `{"a":"\u003c"}`, `{"a":"é"}`, `{"a":"x\ny"}`, `{"a": 1}`,
	`{"a":01}`, `{"a":1.}`, `{"a":1E5}`, `{"a":-0}`, `"s"`, `123`, `nul`, `[1,]`, `{"a":1,}`,
	`{"entityId":"w-1","note":"hello"}`, `{"":1,"a":{"":[]}}`, `{"a":"~\u007f"}`, "{\"a\":\"\x7f\"}",
}

// TestIsCanonicalAgreesWithReencode: whatever isCanonical accepts, the
// re-encoding reproduces byte for byte, so skipping it keeps every digest.
func TestIsCanonicalAgreesWithReencode(t *testing.T) {
	accepted := 0
	for _, s := range canonicalSeeds {
		if isCanonical([]byte(s)) {
			accepted++
			if got := reencode([]byte(s)); !bytes.Equal(got, []byte(s)) {
				t.Errorf("isCanonical(%s) but the canonical form is %s", s, got)
			}
		}
	}
	if accepted < 8 {
		t.Errorf("the fast path accepts only %d of the seeds", accepted)
	}
	for _, s := range []string{`{"b":1,"a":2}`, `{"a":1,"a":2}`, `{"a": 1}`, `{"a":"\u003c"}`, `{"a":"<"}`} {
		if isCanonical([]byte(s)) {
			t.Errorf("isCanonical(%s): want false", s)
		}
	}
}

func FuzzIsCanonical(f *testing.F) {
	for _, s := range canonicalSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if isCanonical(b) {
			if got := reencode(b); !bytes.Equal(got, b) {
				t.Fatalf("isCanonical(%q) but the canonical form is %q", b, got)
			}
		}
	})
}
