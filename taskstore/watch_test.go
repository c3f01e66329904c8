package taskstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/taskstore"
)

// These tests poll DynamoDB Local over real sockets, which testing/synctest
// cannot put in a bubble; they count polls through the store's poll hook
// and never assert on elapsed time.

// pollCounter returns a channel that receives after every poll.
func pollCounter(s *taskstore.Store) <-chan struct{} {
	polled := make(chan struct{}, 100)
	s.SetAfterPoll(func() {
		select {
		case polled <- struct{}{}:
		default:
		}
	})
	return polled
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Watch stays open while the task works (and while a status message is
// set) and closes once the task is cancelled.
func TestWatchClosesWhenTheTaskIsCancelled(t *testing.T) {
	s, _ := newStore(t, taskstore.Options{})
	polled := pollCounter(s)
	task := create(t, s)
	claim(t, s, task.ID, "req-1")
	if err := s.SetStatusMessage(t.Context(), task.ID, "req-1", "working"); err != nil {
		t.Fatal(err)
	}
	cancelled := s.Watch(t.Context(), task.ID, time.Millisecond)
	for range 3 {
		<-polled
	}
	if isClosed(cancelled) {
		t.Fatal("Watch closed while the task was working")
	}
	if err := s.Cancel(t.Context(), alice, task.ID); err != nil {
		t.Fatal(err)
	}
	<-cancelled
}

// A task that is gone (unknown here; expired alike) also closes the watch.
func TestWatchClosesWhenTheTaskIsGone(t *testing.T) {
	s, c := newStore(t, taskstore.Options{TTL: time.Minute})
	task := create(t, s)
	polled := pollCounter(s)
	cancelled := s.Watch(t.Context(), task.ID, time.Millisecond)
	<-polled
	if isClosed(cancelled) {
		t.Fatal("Watch closed on a live task")
	}
	c.Add(2 * time.Minute)
	<-cancelled
	<-s.Watch(t.Context(), "AAAAAAAAAAAAAAAAAAAAAA", time.Millisecond)
}

// When the handler's context ends the watch stops and never closes: the
// handler ended, nothing is left to cancel.
func TestWatchStopsWithTheContext(t *testing.T) {
	s, _ := newStore(t, taskstore.Options{})
	task := create(t, s)
	polled := pollCounter(s)
	ctx, cancel := context.WithCancel(t.Context())
	stopped := s.Watch(ctx, task.ID, time.Millisecond)
	<-polled
	cancel()
	if err := s.Cancel(t.Context(), alice, task.ID); err != nil {
		t.Fatal(err)
	}
	// A live watch sees the cancellation…
	<-s.Watch(t.Context(), task.ID, time.Millisecond)
	// …the stopped one does not.
	if isClosed(stopped) {
		t.Fatal("the stopped watch closed")
	}
}
