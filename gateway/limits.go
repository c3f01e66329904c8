package gateway

import (
	"context"
)

// slots is a counting semaphore: a buffered channel holding one token per
// Invoke in flight.
type slots chan struct{}

func newSlots(n int) slots { return make(slots, n) }

// acquire takes a slot of every limit in order (the request's, then the
// process's), waiting until ctx ends. It returns the release of what it
// took, or ctx's error having taken nothing. The request's slot is taken
// first so a batch queues behind itself rather than holding process slots
// it cannot use yet. A free slot is taken even when ctx has ended: only a
// call that had to wait for one was refused for want of one. (A select
// between a free slot and an ended ctx picks either at random, so a call
// whose deadline had passed before it got here — the tasks table slow to
// admit it — was refused half the time as "at its limit of calls in
// flight" with every slot free.)
func acquire(ctx context.Context, limits ...slots) (release func(), err error) {
	taken := 0
	release = func() {
		for _, s := range limits[:taken] {
			if s != nil {
				<-s
			}
		}
	}
	for _, s := range limits {
		if s == nil {
			taken++ // a nil limit is no limit
			continue
		}
		select {
		case s <- struct{}{}:
			taken++
			continue
		default:
		}
		select {
		case s <- struct{}{}:
			taken++
		case <-ctx.Done():
			release()
			return nil, ctx.Err()
		}
	}
	return release, nil
}
