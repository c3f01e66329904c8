package taskstore_test

import (
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/taskstore"
)

// A cancel marker cancels the owner's call with that key started at or
// before the mark; not another owner's call with the same key, not a later
// call that reused the key, and not after the marker expired.
func TestCancelMarkerIsScopedByOwnerKeyAndTime(t *testing.T) {
	s, c := newStore(t, taskstore.Options{MarkerTTL: time.Minute})
	ctx := t.Context()
	started := c.Now()
	c.Add(time.Second)
	if err := s.MarkCancelled(ctx, alice, "7"); err != nil {
		t.Fatal(err)
	}
	check := func(what, owner, key string, since time.Time, want bool) {
		t.Helper()
		got, err := s.CancelledSince(ctx, owner, key, since)
		if err != nil || got != want {
			t.Errorf("%s: CancelledSince = %v, %v; want %v", what, got, err, want)
		}
	}
	check("the cancelled call", alice, "7", started, true)
	check("a call started at the mark", alice, "7", c.Now(), true)
	check("another owner's call", bob, "7", started, false)
	check("another call", alice, "8", started, false)
	check("a later call reusing the key", alice, "7", c.Now().Add(time.Millisecond), false)
	c.Add(2 * time.Minute)
	check("after expiry", alice, "7", started, false)
}

// WatchCall closes once the call is marked cancelled, not before.
func TestWatchCallClosesOnTheMark(t *testing.T) {
	s, c := newStore(t, taskstore.Options{})
	polled := pollCounter(s)
	started := c.Now()
	cancelled := s.WatchCall(t.Context(), alice, "7", started, time.Millisecond)
	for range 2 {
		<-polled
	}
	if err := s.MarkCancelled(t.Context(), bob, "7"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		<-polled
	}
	if isClosed(cancelled) {
		t.Fatal("WatchCall closed before alice's mark")
	}
	if err := s.MarkCancelled(t.Context(), alice, "7"); err != nil {
		t.Fatal(err)
	}
	<-cancelled
}
