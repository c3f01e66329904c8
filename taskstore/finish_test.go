package taskstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/taskstore"
)

// working → completed with the result; a completed isError result is
// still completed (failed is for protocol errors).
func TestFinishCompleted(t *testing.T) {
	s, c := newStore(t, taskstore.Options{})
	task := create(t, s)
	claim(t, s, task.ID, "req-1")
	c.Add(time.Second)
	result := json.RawMessage(`{"content":[{"type":"text","text":"done"}],"isError":true}`)
	if err := s.Finish(t.Context(), task.ID, "req-1", taskstore.Completed(result)); err != nil {
		t.Fatal(err)
	}
	got := get(t, s, task.ID)
	if got.Status != taskstore.StatusCompleted || string(got.Result) != string(result) || !got.LastUpdatedAt.Equal(c.Now()) {
		t.Errorf("task = %+v", got)
	}
}

// working → completed with a stored result's reference (the claim check):
// the record holds the reference in place of the result, and the tasks/get
// view shows no result until the gateway resolves it.
func TestFinishCompletedWithAStoredResult(t *testing.T) {
	s, _ := newStore(t, taskstore.Options{})
	task := create(t, s)
	claim(t, s, task.ID, "req-1")
	ref := json.RawMessage(`{ "bucket": "payloads", "key": "t/results/c1/a1", "versionId": "v1", "size": 2000000, "sha256": "ab" }`)
	if err := s.Finish(t.Context(), task.ID, "req-1", taskstore.CompletedRef(ref)); err != nil {
		t.Fatal(err)
	}
	got := get(t, s, task.ID)
	if got.Status != taskstore.StatusCompleted || got.Result != nil ||
		string(got.ResultRef) != `{"bucket":"payloads","key":"t/results/c1/a1","versionId":"v1","size":2000000,"sha256":"ab"}` {
		t.Errorf("task = %+v (ref %s)", got, got.ResultRef)
	}
	if v := got.Detailed(); v.Result != nil {
		t.Errorf("the view shows result %s", v.Result)
	}
	task = create(t, s)
	claim(t, s, task.ID, "req-2")
	if err := s.Finish(t.Context(), task.ID, "req-2", taskstore.CompletedRef(json.RawMessage(`"not an object"`))); err == nil {
		t.Error("a reference that is no JSON object was recorded")
	}
}

// working → failed with the JSON-RPC error.
func TestFinishFailed(t *testing.T) {
	s, _ := newStore(t, taskstore.Options{})
	task := create(t, s)
	claim(t, s, task.ID, "req-1")
	e := taskstore.RPCError{Code: -32603, Message: "handler panicked", Data: json.RawMessage(`{"tool":"protocol_error_job"}`)}
	if err := s.Finish(t.Context(), task.ID, "req-1", taskstore.Failed(e)); err != nil {
		t.Fatal(err)
	}
	got := get(t, s, task.ID)
	if got.Status != taskstore.StatusFailed || got.Error == nil || got.Error.Code != e.Code ||
		got.Error.Message != e.Message || string(got.Error.Data) != string(e.Data) || got.Result != nil {
		t.Errorf("task = %+v (error %+v)", got, got.Error)
	}
}

// working → input_required with the requests and the sealed state.
func TestFinishInputRequired(t *testing.T) {
	s, _ := newStore(t, taskstore.Options{})
	task := create(t, s)
	claim(t, s, task.ID, "req-1")
	reqs := map[string]json.RawMessage{"confirm": json.RawMessage(`{"method":"elicitation/create","params":{"message":"Delete?"}}`)}
	if err := s.Finish(t.Context(), task.ID, "req-1", taskstore.InputRequired(reqs, []byte("sealed-state"))); err != nil {
		t.Fatal(err)
	}
	got := get(t, s, task.ID)
	if got.Status != taskstore.StatusInputRequired || string(got.InputRequests["confirm"]) != string(reqs["confirm"]) ||
		string(got.RequestState) != "sealed-state" {
		t.Errorf("task = %+v", got)
	}
}

// An outcome must be well formed: no empty result, error or requests.
func TestFinishRefusesEmptyOutcomes(t *testing.T) {
	s, _ := newStore(t, taskstore.Options{})
	task := create(t, s)
	claim(t, s, task.ID, "req-1")
	for _, o := range []taskstore.Outcome{
		taskstore.Completed(nil), {Status: taskstore.StatusFailed}, taskstore.InputRequired(nil, nil),
		{Status: taskstore.StatusWorking}, {Status: taskstore.StatusCancelled},
	} {
		if err := s.Finish(t.Context(), task.ID, "req-1", o); err == nil {
			t.Errorf("Finish(%+v) succeeded", o)
		}
	}
	if got := get(t, s, task.ID); got.Status != taskstore.StatusWorking {
		t.Errorf("status = %s", got.Status)
	}
}

// Only the run that holds the task may finish it, and a task finishes once.
func TestFinishNeedsTheClaimingRun(t *testing.T) {
	s, _ := newStore(t, taskstore.Options{})
	ctx := t.Context()
	unclaimed := create(t, s)
	wantErr(t, "Finish unclaimed", s.Finish(ctx, unclaimed.ID, "req-1", taskstore.Completed(json.RawMessage(`{}`))), taskstore.ErrClaimed)

	task := create(t, s)
	claim(t, s, task.ID, "req-1")
	wantErr(t, "Finish by req-2", s.Finish(ctx, task.ID, "req-2", taskstore.Completed(json.RawMessage(`{}`))), taskstore.ErrClaimed)
	if err := s.Finish(ctx, task.ID, "req-1", taskstore.Completed(json.RawMessage(`{"n":1}`))); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "second Finish", s.Finish(ctx, task.ID, "req-1", taskstore.Completed(json.RawMessage(`{"n":2}`))), taskstore.ErrNotWorking)
	if got := get(t, s, task.ID); string(got.Result) != `{"n":1}` {
		t.Errorf("result = %s", got.Result)
	}
}

// Two Finishes of one run racing (e.g. a retried invocation overlapping
// the first): exactly one outcome is recorded.
func TestConcurrentFinishesOneWins(t *testing.T) {
	s, _ := newStore(t, taskstore.Options{})
	for range 5 {
		task := create(t, s)
		claim(t, s, task.ID, "req-1")
		finishWith := func(o taskstore.Outcome) func(context.Context) error {
			return func(ctx context.Context) error { return s.Finish(ctx, task.ID, "req-1", o) }
		}
		errs := race(
			finishWith(taskstore.Completed(json.RawMessage(`{"by":"a"}`))),
			finishWith(taskstore.Failed(taskstore.RPCError{Code: -32603, Message: "b"})),
		)
		won := -1
		for i, err := range errs {
			switch {
			case err == nil:
				if won >= 0 {
					t.Fatalf("both finishes won")
				}
				won = i
			case !errors.Is(err, taskstore.ErrNotWorking):
				t.Fatalf("loser's error = %v", err)
			}
		}
		got := get(t, s, task.ID)
		want := []taskstore.Status{taskstore.StatusCompleted, taskstore.StatusFailed}
		if won < 0 || got.Status != want[won] {
			t.Fatalf("winner %d, status %s", won, got.Status)
		}
	}
}

// Cancel racing Finish: either the cancel lands first (the task stays
// cancelled, Finish gets ErrCancelled) or the finish does (the task keeps
// its outcome, Cancel is a no-op) — never a cancelled task with a result.
func TestCancelRacingFinish(t *testing.T) {
	s, _ := newStore(t, taskstore.Options{})
	for range 10 {
		task := create(t, s)
		claim(t, s, task.ID, "req-1")
		errs := race(
			func(ctx context.Context) error { return s.Cancel(ctx, alice, task.ID) },
			func(ctx context.Context) error {
				return s.Finish(ctx, task.ID, "req-1", taskstore.Completed(json.RawMessage(`{"content":[]}`)))
			},
		)
		if errs[0] != nil {
			t.Fatalf("Cancel: %v", errs[0])
		}
		got := get(t, s, task.ID)
		switch {
		case errs[1] == nil && got.Status == taskstore.StatusCompleted && got.Result != nil:
		case errors.Is(errs[1], taskstore.ErrCancelled) && got.Status == taskstore.StatusCancelled && got.Result == nil:
		default:
			t.Fatalf("Finish err %v, task %+v", errs[1], got)
		}
	}
}

// A result above the limit is not stored: the task fails with -32603
// naming the limit, and Finish says so with ErrTooLarge.
func TestFinishOversizedResultFailsNamingTheLimit(t *testing.T) {
	s, _ := newStore(t, taskstore.Options{})
	task := create(t, s)
	claim(t, s, task.ID, "req-1")
	text, _ := json.Marshal(strings.Repeat("x", 360*1024))
	result := json.RawMessage(`{"content":[{"type":"text","text":` + string(text) + `}]}`)
	err := s.Finish(t.Context(), task.ID, "req-1", taskstore.Completed(result))
	wantErr(t, "Finish", err, taskstore.ErrTooLarge)
	got := get(t, s, task.ID)
	if got.Status != taskstore.StatusFailed || got.Result != nil || got.Error == nil || got.Error.Code != -32603 {
		t.Fatalf("task = %+v", got)
	}
	for _, want := range []string{"350 KB", "400 KB", "result"} {
		if !strings.Contains(got.Error.Message, want) {
			t.Errorf("error message %q does not say %q", got.Error.Message, want)
		}
	}
}

// A result just under the limit fits the 400 KB item with the rest of it.
func TestFinishResultJustUnderTheLimitIsStored(t *testing.T) {
	s, _ := newStore(t, taskstore.Options{})
	task := create(t, s)
	claim(t, s, task.ID, "req-1")
	result := json.RawMessage(`"` + strings.Repeat("x", taskstore.DefaultMaxPayloadBytes-2) + `"`)
	if err := s.Finish(t.Context(), task.ID, "req-1", taskstore.Completed(result)); err != nil {
		t.Fatal(err)
	}
	if got := get(t, s, task.ID); got.Status != taskstore.StatusCompleted || len(got.Result) != len(result) {
		t.Errorf("status %s, result %d bytes", got.Status, len(got.Result))
	}
}

// The status message is how a task reports progress; only the holding run
// of a working task may set it.
func TestSetStatusMessage(t *testing.T) {
	s, c := newStore(t, taskstore.Options{})
	ctx := t.Context()
	task := create(t, s)
	claim(t, s, task.ID, "req-1")
	c.Add(time.Second)
	if err := s.SetStatusMessage(ctx, task.ID, "req-1", "page 3 of 10"); err != nil {
		t.Fatal(err)
	}
	if got := get(t, s, task.ID); got.StatusMessage != "page 3 of 10" || !got.LastUpdatedAt.Equal(c.Now()) {
		t.Errorf("task = %+v", got)
	}
	wantErr(t, "by req-2", s.SetStatusMessage(ctx, task.ID, "req-2", "x"), taskstore.ErrClaimed)
	if err := s.Cancel(ctx, alice, task.ID); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "after cancel", s.SetStatusMessage(ctx, task.ID, "req-1", "x"), taskstore.ErrCancelled)
}

// Abandon fails a working task whoever holds it (a crashed last attempt),
// and leaves a finished or cancelled one alone.
func TestAbandon(t *testing.T) {
	s, _ := newStore(t, taskstore.Options{})
	ctx := t.Context()
	e := taskstore.RPCError{Code: -32603, Message: "the function failed on every attempt"}
	task := create(t, s)
	claim(t, s, task.ID, "req-1")
	if err := s.Abandon(ctx, task.ID, e); err != nil {
		t.Fatal(err)
	}
	if got := get(t, s, task.ID); got.Status != taskstore.StatusFailed || got.Error.Message != e.Message {
		t.Errorf("task = %+v", got)
	}
	wantErr(t, "Abandon failed", s.Abandon(ctx, task.ID, e), taskstore.ErrNotWorking)
	cancelled := create(t, s)
	if err := s.Cancel(ctx, alice, cancelled.ID); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "Abandon cancelled", s.Abandon(ctx, cancelled.ID, e), taskstore.ErrCancelled)
}
