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

// TestMarkerDatedAheadCancelsNothing: a marker dated more than a minute
// after the function's now (no gateway writes one: planted to wait for
// calls yet to start) cancels no call.
func TestMarkerDatedAheadCancelsNothing(t *testing.T) {
	s, c, tb := newStoreTable(t, taskstore.Options{MarkerTTL: 3 * time.Hour})
	ctx := t.Context()
	// A writer whose clock says two hours from now.
	at := c.Now().Add(2 * time.Hour)
	future := taskstore.New(tb.client, tb.name, taskstore.Options{MarkerTTL: time.Hour, Now: func() time.Time { return at }})
	if err := future.MarkCancelled(ctx, alice, "call c-9"); err != nil {
		t.Fatal(err)
	}
	c.Add(time.Hour) // a call that starts an hour later
	got, err := s.CancelledSince(ctx, alice, "call c-9", c.Now())
	if err != nil || got {
		t.Fatalf("a marker dated an hour ahead: CancelledSince = %v, %v", got, err)
	}
	c.Add(59*time.Minute + 30*time.Second) // within a minute of its date: a clock skew
	if got, _ := s.CancelledSince(ctx, alice, "call c-9", c.Now()); !got {
		t.Fatal("a marker within a minute of now cancels nothing")
	}
}
