package taskstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/taskstore"
)

const hold = 55 * time.Minute

// admitted creates a task of owner the way the gateway does: an id, its
// admission, then its record.
func admitted(t *testing.T, s *taskstore.Store, owner string, lim taskstore.Limits) (*taskstore.Task, error) {
	t.Helper()
	id := taskstore.NewID("slow_compute")
	if err := s.Admit(t.Context(), owner, id, lim); err != nil {
		return nil, err
	}
	task, err := s.Create(t.Context(), taskstore.NewTask{ID: id, Owner: owner, Tool: "slow_compute", Params: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	return task, nil
}

func wantLimit(t *testing.T, err error, limit string, max int) *taskstore.LimitError {
	t.Helper()
	var le *taskstore.LimitError
	if !errors.As(err, &le) || !errors.Is(err, taskstore.ErrLimit) || le.Limit != limit || le.Max != max {
		t.Fatalf("err = %v, want the %s limit of %d", err, limit, max)
	}
	return le
}

// TestAdmitCapsWorkingTasksPerOwnerAndInTotal: an owner gets PerOwner
// working tasks, all owners together Total; a refusal says which limit,
// its value and when the earliest slot frees at the latest.
func TestAdmitCapsWorkingTasksPerOwnerAndInTotal(t *testing.T) {
	s, c := newStore(t, taskstore.Options{})
	lim := taskstore.Limits{PerOwner: 2, Total: 3, Hold: hold}
	for range 2 {
		if _, err := admitted(t, s, alice, lim); err != nil {
			t.Fatal(err)
		}
	}
	c.Add(time.Minute)
	_, err := admitted(t, s, alice, lim)
	if le := wantLimit(t, err, taskstore.LimitPerOwner, 2); le.RetryAfter != hold-time.Minute {
		t.Errorf("retry after %v, want %v", le.RetryAfter, hold-time.Minute)
	}
	if _, err := admitted(t, s, bob, lim); err != nil {
		t.Fatal(err)
	}
	_, err = admitted(t, s, "jwt:carol", lim)
	wantLimit(t, err, taskstore.LimitTotal, 3)
	// alice's refusal took none of the total: bob's was the third.
}

// TestSlotFreesWhenItsTaskEndsOrItsHoldPasses: nobody polls, and yet a
// slot is free once its task completed, was cancelled or asks for input —
// and, whatever the record says, once its hold has passed. A task admitted
// but never written keeps its slot for a minute.
func TestSlotFreesWhenItsTaskEndsOrItsHoldPasses(t *testing.T) {
	s, c := newStore(t, taskstore.Options{})
	ctx := t.Context()
	lim := taskstore.Limits{PerOwner: 1, Hold: hold}
	end := map[string]func(t *testing.T, task *taskstore.Task){
		"completed": func(t *testing.T, task *taskstore.Task) {
			claim(t, s, task.ID, "r")
			if err := s.Finish(ctx, task.ID, "r", taskstore.Completed(json.RawMessage(`{}`))); err != nil {
				t.Fatal(err)
			}
		},
		"input_required": func(t *testing.T, task *taskstore.Task) {
			claim(t, s, task.ID, "r")
			if err := s.Finish(ctx, task.ID, "r", taskstore.InputRequired(map[string]json.RawMessage{"ok": json.RawMessage(`{}`)}, nil)); err != nil {
				t.Fatal(err)
			}
		},
		"cancelled": func(t *testing.T, task *taskstore.Task) {
			if err := s.Cancel(ctx, task.Owner, task.ID); err != nil {
				t.Fatal(err)
			}
		},
		"hold passed": func(*testing.T, *taskstore.Task) { c.Add(hold) },
	}
	for name, f := range end {
		t.Run(name, func(t *testing.T) {
			owner := "jwt:" + name
			task, err := admitted(t, s, owner, lim)
			if err != nil {
				t.Fatal(err)
			}
			_, err = admitted(t, s, owner, lim)
			wantLimit(t, err, taskstore.LimitPerOwner, 1)
			c.Add(time.Millisecond)
			f(t, task)
			if _, err := admitted(t, s, owner, lim); err != nil {
				t.Fatalf("after the task ended: %v", err)
			}
		})
	}
	t.Run("never written", func(t *testing.T) {
		if err := s.Admit(ctx, "jwt:lost", taskstore.NewID("slow_compute"), lim); err != nil {
			t.Fatal(err)
		}
		_, err := admitted(t, s, "jwt:lost", lim)
		wantLimit(t, err, taskstore.LimitPerOwner, 1)
		c.Add(time.Minute)
		if _, err := admitted(t, s, "jwt:lost", lim); err != nil {
			t.Fatalf("a minute after an admission that was never written: %v", err)
		}
	})
	t.Run("release", func(t *testing.T) {
		task, err := admitted(t, s, "jwt:released", lim)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Release(ctx, "jwt:released", task.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := admitted(t, s, "jwt:released", lim); err != nil {
			t.Fatalf("after Release: %v", err)
		}
	})
}

// TestResumedTaskIsAdmittedAgain: a task waiting for input holds no slot;
// the update that resumes it admits it again (before the record says
// working, so a concurrent admission does not take that slot away).
func TestResumedTaskIsAdmittedAgain(t *testing.T) {
	s, c := newStore(t, taskstore.Options{})
	ctx := t.Context()
	lim := taskstore.Limits{PerOwner: 1, Hold: hold}
	task, err := admitted(t, s, alice, lim)
	if err != nil {
		t.Fatal(err)
	}
	claim(t, s, task.ID, "r")
	if err := s.Finish(ctx, task.ID, "r", taskstore.InputRequired(map[string]json.RawMessage{"ok": json.RawMessage(`{}`)}, nil)); err != nil {
		t.Fatal(err)
	}
	c.Add(time.Second)
	if err := s.Admit(ctx, alice, task.ID, lim); err != nil {
		t.Fatalf("the resume: %v", err)
	}
	// Still input_required: the state predates the admission, so the
	// slot holds.
	_, err = admitted(t, s, alice, lim)
	wantLimit(t, err, taskstore.LimitPerOwner, 1)
	if _, resume, err := s.Update(ctx, alice, task.ID, map[string]json.RawMessage{"ok": json.RawMessage(`{}`)}); err != nil || !resume {
		t.Fatalf("Update: %v %v", resume, err)
	}
	_, err = admitted(t, s, alice, lim)
	wantLimit(t, err, taskstore.LimitPerOwner, 1)
}

// TestConcurrentAdmissionsStopAtTheCap: 200 admissions of one owner at
// once: exactly the cap is admitted, every other one is refused by the
// per-owner limit — never by the total, which the burst must not fill
// even for a moment.
func TestConcurrentAdmissionsStopAtTheCap(t *testing.T) {
	s, _ := newStore(t, taskstore.Options{})
	const n, max = 200, 5
	lim := taskstore.Limits{PerOwner: max, Total: 2 * max, Hold: hold}
	var ok, refused atomic.Int32
	fs := make([]func(context.Context) error, n)
	for i := range fs {
		fs[i] = func(ctx context.Context) error {
			err := s.Admit(ctx, alice, taskstore.NewID("slow_compute"), lim)
			var le *taskstore.LimitError
			switch {
			case err == nil:
				ok.Add(1)
			case errors.As(err, &le) && le.Limit == taskstore.LimitPerOwner:
				refused.Add(1)
			default:
				return err
			}
			return nil
		}
	}
	for _, err := range race(fs...) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if ok.Load() != max || refused.Load() != n-max {
		t.Fatalf("%d admitted, %d refused; want %d and %d", ok.Load(), refused.Load(), max, n-max)
	}
}
