package audit

import (
	"regexp"
	"testing"
	"time"
)

func TestIDs(t *testing.T) {
	span := regexp.MustCompile(`^[0-9a-f]{16}$`)
	seen := map[string]bool{}
	for range 1000 {
		id := NewSpanID()
		if !span.MatchString(id) || seen[id] {
			t.Fatalf("span id %q (dup %v)", id, seen[id])
		}
		seen[id] = true
	}
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	tr := NewTraceID(at)
	if !regexp.MustCompile(`^1-[0-9a-f]{8}-[0-9a-f]{24}$`).MatchString(tr) || tr[2:10] != "6b0c13c0" {
		t.Errorf("trace id %q (epoch %x)", tr, at.Unix())
	}
	if NewTraceID(at) == tr {
		t.Error("trace ids repeat")
	}
}

func TestSpanForOutcomes(t *testing.T) {
	for code, want := range map[string][3]bool{ // error, fault, throttle
		"":                      {false, false, false},
		"NOT_FOUND":             {true, false, false},
		"RATE_LIMITED":          {true, false, true},
		"INTERNAL_SERVER_ERROR": {false, true, false},
		"TIMEOUT":               {false, true, false},
	} {
		r := &Row{Tool: "t/x y!é", OK: code == "", ErrorCode: code}
		s := spanFor(r)
		if got := [3]bool{s.Error, s.Fault, s.Throttle}; got != want {
			t.Errorf("%q: error/fault/throttle = %v, want %v", code, got, want)
		}
		if s.Name != "t/x y__" {
			t.Errorf("name %q", s.Name)
		}
	}
}
