package handlers

import (
	"errors"
	"testing"
)

func TestCursorRoundTrip(t *testing.T) {
	c := cursorKey{Channel: "general", CreatedAt: "2026-11-29T12:00:00.123456789Z", ID: "ABCDEFGHIJKLMNOPQRSTUVWXYZ"}
	s := encodeCursor(c)
	got, err := decodeCursor(s, "general")
	if err != nil {
		t.Fatal(err)
	}
	if got.Channel != c.Channel || got.CreatedAt != c.CreatedAt || got.ID != c.ID {
		t.Fatalf("decoded %+v from %+v", got, c)
	}
	if _, err := decodeCursor(s, "other"); !errors.Is(err, ErrBadCursor) {
		t.Fatalf("cursor accepted for another channel: %v", err)
	}
}

// FuzzDecodeCursor: decoding never panics, everything it rejects is
// ErrBadCursor, and everything it accepts is a position DynamoDB accepts
// (a well-formed key) that encodes back to a cursor naming the same position.
func FuzzDecodeCursor(f *testing.F) {
	f.Add(encodeCursor(cursorKey{Channel: "general", CreatedAt: "2026-11-29T12:00:00.000000000Z", ID: "ABCDEFGHIJKLMNOPQRSTUVWXYZ"}), "general")
	f.Add("", "general")
	f.Add("e30", "general")  // {}
	f.Add("eyJ2IjoxfQ", "c") // {"v":1}
	f.Fuzz(func(t *testing.T, s, channel string) {
		c, err := decodeCursor(s, channel)
		if err != nil {
			if !errors.Is(err, ErrBadCursor) {
				t.Fatalf("rejection %v is not ErrBadCursor", err)
			}
			return
		}
		if c.Channel != channel || !idPattern.MatchString(c.ID) {
			t.Fatalf("accepted %+v for channel %q", c, channel)
		}
		again, err := decodeCursor(encodeCursor(c), channel)
		if err != nil || again != c {
			t.Fatalf("re-encoded cursor: %+v, %v; want %+v", again, err, c)
		}
	})
}
