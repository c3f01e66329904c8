package taskstore_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mcpfn/mcpfn/taskstore"
)

// inputRequired creates a task whose run req-1 asked for keys.
func inputRequired(t *testing.T, s *taskstore.Store, keys ...string) *taskstore.Task {
	t.Helper()
	task := create(t, s)
	claim(t, s, task.ID, "req-1")
	reqs := map[string]json.RawMessage{}
	for _, k := range keys {
		reqs[k] = json.RawMessage(`{"method":"elicitation/create","params":{"message":"` + k + `?"}}`)
	}
	if err := s.Finish(t.Context(), task.ID, "req-1", taskstore.InputRequired(reqs, []byte("sealed"))); err != nil {
		t.Fatal(err)
	}
	return task
}

func answers(kv ...string) map[string]json.RawMessage {
	m := map[string]json.RawMessage{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = json.RawMessage(kv[i+1])
	}
	return m
}

// multi_input: answering one of two requests keeps input_required; the
// second answer resumes the task (working) with both answers for the run.
func TestUpdatePartialThenComplete(t *testing.T) {
	s, _ := newStore(t, taskstore.Options{})
	ctx := t.Context()
	task := inputRequired(t, s, "name", "color")

	got, resume, err := s.Update(ctx, alice, task.ID, answers("name", `{"action":"accept","content":{"name":"Alice"}}`))
	if err != nil || resume {
		t.Fatalf("first Update: resume %v, err %v", resume, err)
	}
	if got.Status != taskstore.StatusInputRequired || len(got.InputResponses) != 1 {
		t.Fatalf("after one answer: %+v", got)
	}

	got, resume, err = s.Update(ctx, alice, task.ID, answers("color", `{"action":"accept","content":{"color":"blue"}}`))
	if err != nil || !resume {
		t.Fatalf("second Update: resume %v, err %v", resume, err)
	}
	round := got.RoundResponses()
	if got.Status != taskstore.StatusWorking || got.RunID != "" || len(round) != 2 ||
		string(round["name"]) != `{"action":"accept","content":{"name":"Alice"}}` || string(got.RequestState) != "sealed" {
		t.Fatalf("after both answers: %+v, round %v", got, round)
	}
	if stored := get(t, s, task.ID); stored.Status != taskstore.StatusWorking {
		t.Errorf("stored status = %s", stored.Status)
	}
}

// Unknown keys and keys answered before are ignored; an update of a task
// that is not input_required changes nothing. None of these is an error.
func TestUpdateIgnoresUnknownAndAnsweredKeys(t *testing.T) {
	s, _ := newStore(t, taskstore.Options{})
	ctx := t.Context()
	task := inputRequired(t, s, "a", "b")
	if _, _, err := s.Update(ctx, alice, task.ID, answers("a", `1`)); err != nil {
		t.Fatal(err)
	}
	before := get(t, s, task.ID)
	got, resume, err := s.Update(ctx, alice, task.ID, answers("a", `2`, "zzz", `3`))
	if err != nil || resume {
		t.Fatalf("resume %v, err %v", resume, err)
	}
	if got.Version != before.Version || string(got.InputResponses["a"]) != `1` || got.InputResponses["zzz"] != nil {
		t.Errorf("task = %+v", got)
	}

	working := create(t, s)
	got, resume, err = s.Update(ctx, alice, working.ID, answers("a", `1`))
	if err != nil || resume || got.Status != taskstore.StatusWorking || got.Version != working.Version {
		t.Errorf("update of a working task: resume %v, err %v, task %+v", resume, err, got)
	}
}

// Another owner's update is not found and records nothing.
func TestUpdateIsScopedToTheOwner(t *testing.T) {
	s, _ := newStore(t, taskstore.Options{})
	task := inputRequired(t, s, "a")
	_, _, err := s.Update(t.Context(), bob, task.ID, answers("a", `1`))
	wantErr(t, "Update by bob", err, taskstore.ErrNotFound)
	if got := get(t, s, task.ID); got.Status != taskstore.StatusInputRequired || len(got.InputResponses) != 0 {
		t.Errorf("task = %+v", got)
	}
}

// Concurrent updates answering different keys both land, and exactly one
// of them resumes the task (so the function is re-invoked once).
func TestConcurrentUpdatesResumeOnce(t *testing.T) {
	s, _ := newStore(t, taskstore.Options{})
	for range 5 {
		task := inputRequired(t, s, "a", "b")
		var resumed [2]bool
		updateWith := func(i int, key string) func(context.Context) error {
			return func(ctx context.Context) error {
				_, r, err := s.Update(ctx, alice, task.ID, answers(key, `true`))
				resumed[i] = r
				return err
			}
		}
		for _, err := range race(updateWith(0, "a"), updateWith(1, "b")) {
			if err != nil {
				t.Fatal(err)
			}
		}
		if resumed[0] == resumed[1] {
			t.Fatalf("resumed = %v, want exactly one", resumed)
		}
		if got := get(t, s, task.ID); got.Status != taskstore.StatusWorking || len(got.InputResponses) != 2 {
			t.Fatalf("task = %+v", got)
		}
	}
}

// Answers that would overflow the item are refused.
func TestUpdateRefusesOversizedAnswers(t *testing.T) {
	s, _ := newStore(t, taskstore.Options{MaxPayloadBytes: 1024})
	task := inputRequired(t, s, "a")
	big, _ := json.Marshal(make([]byte, 2048))
	_, _, err := s.Update(t.Context(), alice, task.ID, map[string]json.RawMessage{"a": big})
	wantErr(t, "Update", err, taskstore.ErrTooLarge)
}
