package taskstore_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/taskstore"
)

// Another owner's task, an unknown id and an empty id are all not found,
// indistinguishably.
func TestGetIsScopedToTheOwner(t *testing.T) {
	s, _ := newStore(t, taskstore.Options{})
	task := create(t, s)
	_, err := s.Get(t.Context(), bob, task.ID)
	wantErr(t, "Get by bob", err, taskstore.ErrNotFound)
	_, err = s.Get(t.Context(), alice, "AAAAAAAAAAAAAAAAAAAAAA")
	wantErr(t, "Get unknown", err, taskstore.ErrNotFound)
	_, err = s.Get(t.Context(), alice, "")
	wantErr(t, "Get empty", err, taskstore.ErrNotFound)
}

// Once its TTL has passed a task is absent to every operation, although
// DynamoDB's TTL has not deleted it yet.
func TestExpiredTaskIsAbsent(t *testing.T) {
	s, c := newStore(t, taskstore.Options{TTL: time.Minute})
	task := create(t, s)
	ctx := t.Context()
	c.Add(time.Minute - time.Second)
	get(t, s, task.ID)
	c.Add(2 * time.Second)
	_, err := s.Get(ctx, alice, task.ID)
	wantErr(t, "Get", err, taskstore.ErrNotFound)
	wantErr(t, "Cancel", s.Cancel(ctx, alice, task.ID), taskstore.ErrNotFound)
	_, err = s.Claim(ctx, task.ID, "run-1")
	wantErr(t, "Claim", err, taskstore.ErrNotFound)
	_, _, err = s.Update(ctx, alice, task.ID, nil)
	wantErr(t, "Update", err, taskstore.ErrNotFound)
}

// A cancel marker lives in the same table but is never a task: not for
// Get, Claim or Cancel, even under its own key.
func TestCancelMarkerIsNotATask(t *testing.T) {
	s, _ := newStore(t, taskstore.Options{})
	ctx := t.Context()
	if err := s.MarkCancelled(ctx, alice, "1"); err != nil {
		t.Fatal(err)
	}
	id := taskstore.MarkerKey(alice, "1")
	_, err := s.Get(ctx, alice, id)
	wantErr(t, "Get", err, taskstore.ErrNotFound)
	_, err = s.Claim(ctx, id, "run-1")
	wantErr(t, "Claim", err, taskstore.ErrNotFound)
	wantErr(t, "Cancel", s.Cancel(ctx, alice, id), taskstore.ErrNotFound)
}

// Ids come from clients: anything that is not a task id is not found,
// not a DynamoDB validation error (a key longer than 2048 bytes is one).
func TestMalformedIDsAreNotFound(t *testing.T) {
	s, _ := newStore(t, taskstore.Options{})
	ctx := t.Context()
	for _, id := range []string{"", "short", strings.Repeat("A", 3000), "AAAAAAAAAAAAAAAAAAAAA#", "AAAAAAAAAAAAAAAAAAAAA="} {
		_, err := s.Get(ctx, alice, id)
		wantErr(t, "Get", err, taskstore.ErrNotFound)
		wantErr(t, "Cancel", s.Cancel(ctx, alice, id), taskstore.ErrNotFound)
		_, _, err = s.Update(ctx, alice, id, nil)
		wantErr(t, "Update", err, taskstore.ErrNotFound)
		_, err = s.Claim(ctx, id, "req-1")
		wantErr(t, "Claim", err, taskstore.ErrNotFound)
		wantErr(t, "Finish", s.Finish(ctx, id, "req-1", taskstore.Completed(json.RawMessage(`{}`))), taskstore.ErrNotFound)
	}
}
