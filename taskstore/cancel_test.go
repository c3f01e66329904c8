package taskstore_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/taskstore"
)

// working → cancelled; lastUpdatedAt moves, the version increases.
func TestCancelWorkingTask(t *testing.T) {
	s, c := newStore(t, taskstore.Options{})
	task := create(t, s)
	c.Add(time.Second)
	if err := s.Cancel(t.Context(), alice, task.ID); err != nil {
		t.Fatal(err)
	}
	got := get(t, s, task.ID)
	if got.Status != taskstore.StatusCancelled || !got.LastUpdatedAt.Equal(c.Now()) || got.Version != task.Version+1 {
		t.Errorf("task = %+v", got)
	}
}

// input_required → cancelled.
func TestCancelInputRequiredTask(t *testing.T) {
	s, _ := newStore(t, taskstore.Options{})
	task := create(t, s)
	claim(t, s, task.ID, "run-1")
	if err := s.Finish(t.Context(), task.ID, "run-1", taskstore.InputRequired(
		map[string]json.RawMessage{"confirm": json.RawMessage(`{"method":"elicitation/create"}`)}, []byte("sealed"))); err != nil {
		t.Fatal(err)
	}
	if err := s.Cancel(t.Context(), alice, task.ID); err != nil {
		t.Fatal(err)
	}
	if got := get(t, s, task.ID); got.Status != taskstore.StatusCancelled {
		t.Errorf("status = %s", got.Status)
	}
}

// Cancelling a terminal task changes nothing and is not an error (the
// tasks/cancel ack is the same); cancelling twice likewise.
func TestCancelTerminalTaskIsANoOp(t *testing.T) {
	s, _ := newStore(t, taskstore.Options{})
	ctx := t.Context()
	done := create(t, s)
	claim(t, s, done.ID, "run-1")
	if err := s.Finish(ctx, done.ID, "run-1", taskstore.Completed(json.RawMessage(`{"content":[]}`))); err != nil {
		t.Fatal(err)
	}
	before := get(t, s, done.ID)
	if err := s.Cancel(ctx, alice, done.ID); err != nil {
		t.Fatalf("Cancel completed: %v", err)
	}
	if after := get(t, s, done.ID); after.Status != taskstore.StatusCompleted || after.Version != before.Version {
		t.Errorf("after cancel: %+v", after)
	}

	twice := create(t, s)
	for i := range 2 {
		if err := s.Cancel(ctx, alice, twice.ID); err != nil {
			t.Fatalf("Cancel #%d: %v", i+1, err)
		}
	}
}

// Another owner cannot cancel (not found, as for an unknown id), and the
// task keeps running.
func TestCancelIsScopedToTheOwner(t *testing.T) {
	s, _ := newStore(t, taskstore.Options{})
	task := create(t, s)
	wantErr(t, "Cancel by bob", s.Cancel(t.Context(), bob, task.ID), taskstore.ErrNotFound)
	wantErr(t, "Cancel unknown", s.Cancel(t.Context(), alice, "AAAAAAAAAAAAAAAAAAAAAA"), taskstore.ErrNotFound)
	if got := get(t, s, task.ID); got.Status != taskstore.StatusWorking {
		t.Errorf("status = %s", got.Status)
	}
}

// An unauthenticated gateway may pass an empty owner: it is an owner like
// any other, not "no owner".
func TestEmptyOwnerIsAnOwner(t *testing.T) {
	s, _ := newStore(t, taskstore.Options{})
	ctx := t.Context()
	task, err := s.Create(ctx, taskstore.NewTask{Owner: "", Tool: "slow_compute"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Get(ctx, alice, task.ID)
	wantErr(t, "Get by alice", err, taskstore.ErrNotFound)
	if err := s.Cancel(ctx, "", task.ID); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "", task.ID)
	if err != nil || got.Status != taskstore.StatusCancelled {
		t.Fatalf("Get: %+v, %v", got, err)
	}
}
