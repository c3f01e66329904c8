package taskstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/mcpfn/mcpfn/taskstore"
)

// A claim binds the run; the same run id claims again (Lambda's async
// retry reuses the request id) and Attempts says it is a retry.
func TestClaimAgainBySameRunCountsAttempts(t *testing.T) {
	s, _ := newStore(t, taskstore.Options{})
	task := create(t, s)
	first := claim(t, s, task.ID, "req-1")
	if first.RunID != "req-1" || first.Attempts != 1 || string(first.Params) != string(task.Params) {
		t.Errorf("first claim = %+v", first)
	}
	retry := claim(t, s, task.ID, "req-1")
	if retry.Attempts != 2 || retry.Version != first.Version+1 {
		t.Errorf("retry claim = %+v", retry)
	}
	if retry.Status != taskstore.StatusWorking {
		t.Errorf("status = %s", retry.Status)
	}
}

// A different run may not take a claimed task.
func TestClaimByAnotherRunIsRefused(t *testing.T) {
	s, _ := newStore(t, taskstore.Options{})
	task := create(t, s)
	claim(t, s, task.ID, "req-1")
	_, err := s.Claim(t.Context(), task.ID, "req-2")
	wantErr(t, "Claim req-2", err, taskstore.ErrClaimed)
	if got := get(t, s, task.ID); got.RunID != "req-1" || got.Attempts != 1 {
		t.Errorf("task = %+v", got)
	}
}

// Only a working task can be claimed.
func TestClaimNeedsAWorkingTask(t *testing.T) {
	s, _ := newStore(t, taskstore.Options{})
	ctx := t.Context()
	cancelled := create(t, s)
	if err := s.Cancel(ctx, alice, cancelled.ID); err != nil {
		t.Fatal(err)
	}
	_, err := s.Claim(ctx, cancelled.ID, "req-1")
	wantErr(t, "Claim cancelled", err, taskstore.ErrCancelled)

	done := create(t, s)
	claim(t, s, done.ID, "req-1")
	if err := s.Finish(ctx, done.ID, "req-1", taskstore.Failed(taskstore.RPCError{Code: -32603, Message: "boom"})); err != nil {
		t.Fatal(err)
	}
	_, err = s.Claim(ctx, done.ID, "req-1")
	wantErr(t, "Claim failed", err, taskstore.ErrNotWorking)

	_, err = s.Claim(ctx, "AAAAAAAAAAAAAAAAAAAAAA", "req-1")
	wantErr(t, "Claim unknown", err, taskstore.ErrNotFound)
	_, err = s.Claim(ctx, done.ID, "")
	if err == nil {
		t.Error("Claim with an empty run id succeeded")
	}
}

// Of two runs claiming at once exactly one wins; the other gets ErrClaimed.
func TestConcurrentClaimsOneWins(t *testing.T) {
	s, _ := newStore(t, taskstore.Options{})
	for range 5 {
		task := create(t, s)
		claimAs := func(run string) func(context.Context) error {
			return func(ctx context.Context) error { _, err := s.Claim(ctx, task.ID, run); return err }
		}
		errs := race(claimAs("req-a"), claimAs("req-b"))
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, taskstore.ErrClaimed):
				t.Fatalf("loser's error = %v", err)
			}
		}
		if won != 1 {
			t.Fatalf("%d claims won: %v", won, errs)
		}
		if got := get(t, s, task.ID); got.Attempts != 1 {
			t.Errorf("attempts = %d", got.Attempts)
		}
	}
}

// After tasks/update resumes a task, the next round's run (a new request
// id) claims it; the previous round's run no longer holds it.
func TestResumedTaskIsClaimedByTheNextRun(t *testing.T) {
	s, _ := newStore(t, taskstore.Options{})
	ctx := t.Context()
	task := create(t, s)
	claim(t, s, task.ID, "req-1")
	req := map[string]json.RawMessage{"confirm": json.RawMessage(`{"method":"elicitation/create"}`)}
	if err := s.Finish(ctx, task.ID, "req-1", taskstore.InputRequired(req, []byte("state-1"))); err != nil {
		t.Fatal(err)
	}
	if _, resume, err := s.Update(ctx, alice, task.ID, map[string]json.RawMessage{"confirm": json.RawMessage(`{"action":"accept"}`)}); err != nil || !resume {
		t.Fatalf("Update: resume %v, err %v", resume, err)
	}
	wantErr(t, "Finish by the old run", s.Finish(ctx, task.ID, "req-1", taskstore.Completed(json.RawMessage(`{}`))), taskstore.ErrClaimed)
	next := claim(t, s, task.ID, "req-2")
	if next.RunID != "req-2" || next.Attempts != 1 || string(next.RequestState) != "state-1" {
		t.Errorf("next round's claim = %+v", next)
	}
}
