package taskstore

import (
	"context"
	"time"
)

// MarkCancelled records that owner cancelled the synchronous call
// requestKey (notifications/cancelled; the gateway chooses the key, e.g.
// the JSON-RPC id). The marker lives Options.MarkerTTL; a second mark moves
// its time forward. Markers share the table with tasks under keys no task
// id can take.
func (s *Store) MarkCancelled(ctx context.Context, owner, requestKey string) error {
	return errUnimplemented
}

// CancelledSince reports whether owner marked requestKey cancelled at or
// after t — t being when the call started, so a marker left by an earlier
// call that reused the key does not cancel this one.
func (s *Store) CancelledSince(ctx context.Context, owner, requestKey string, t time.Time) (bool, error) {
	return false, errUnimplemented
}

// WatchCall polls [Store.CancelledSince] every interval (the first poll
// after one interval, so a short call costs no read) and closes the
// returned channel once the call is marked cancelled. It stops polling,
// without closing, when ctx ends.
func (s *Store) WatchCall(ctx context.Context, owner, requestKey string, since time.Time, interval time.Duration) <-chan struct{} {
	return nil
}
