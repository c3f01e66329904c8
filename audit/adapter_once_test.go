package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
)

// These tests hold the adapter to ADR 0016: a destructive call id runs at
// most once, and a destructive tool never runs without evidence.

// countingDelete is a destructive tool that counts its handler's runs; mode
// "fail" makes it fail with NOT_FOUND.
func countingDelete(t testing.TB, runs *atomic.Int32) *adapter.Tool {
	t.Helper()
	return adapter.MustDefine(adapter.ToolDef[pathIn, deleteOut]{
		Name:        "broadcast_delete",
		Destructive: true,
		Handler: func(_ context.Context, call *adapter.Call, in pathIn) (deleteOut, error) {
			runs.Add(1)
			call.SetDimension("entityId", in.ID)
			if in.Mode == "fail" {
				return deleteOut{}, adapter.NewError(adapter.CodeNotFound, "no broadcast "+in.ID)
			}
			return deleteOut{Deleted: in.ID}, nil
		},
	})
}

// answer is the error body of a function's answer to an envelope, or nil
// for a success.
type answer struct {
	Error     string `json:"error"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
	Hint      string `json:"hint"`
	Details   struct {
		CallID  string `json:"callId"`
		Earlier struct {
			Status    string `json:"status"`
			OK        *bool  `json:"ok"`
			ErrorCode string `json:"errorCode"`
			Stage     string `json:"stage"`
			StartedAt string `json:"startedAt"`
			Outcome   string `json:"outcome"`
		} `json:"earlierAttempt"`
	} `json:"details"`
}

func answerOf(t testing.TB, raw []byte) *answer {
	t.Helper()
	var resp struct {
		Result struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal(raw, &resp); err != nil {
		t.Fatalf("answer %s: %v", raw, err)
	}
	if !resp.Result.IsError {
		return nil
	}
	var a answer
	if len(resp.Result.Content) != 1 || json.Unmarshal([]byte(resp.Result.Content[0].Text), &a) != nil {
		t.Fatalf("error result without the error body: %s", raw)
	}
	return &a
}

// sameInstant compares the row's startedAt with the answer's.
func sameInstant(t testing.TB, row, answer string) bool {
	t.Helper()
	a, err1 := time.Parse(time.RFC3339Nano, row)
	b, err2 := time.Parse(time.RFC3339Nano, answer)
	return err1 == nil && err2 == nil && a.Equal(b)
}

// TestAdapterDestructiveCallIDRunsAtMostOnce: the same envelope invoked twice
// (an SDK retry, a Lambda async retry, a replay) runs the handler once; the
// second answer is CONFLICT, not retryable, with a hint and what the first
// attempt's row says; and that row is left exactly as it was.
func TestAdapterDestructiveCallIDRunsAtMostOnce(t *testing.T) {
	for _, tc := range []struct {
		name, mode, code, stage string
		ok                      bool
	}{
		{"first attempt succeeded", "", "", "", true},
		{"first attempt failed", "fail", "NOT_FOUND", "handler", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			var runs atomic.Int32
			fn := newFunction(countingDelete(t, &runs), adapter.WithAuditor(e.auditor(t, audit.Config{})), quietAdapter())
			payload := pathEnvelope(t, "call-once", pathIn{ID: "b-1", Mode: tc.mode})

			if a := answerOf(t, invokeLambda(t, fn, payload, "")); (a == nil) != tc.ok {
				t.Fatalf("first answer: %+v", a)
			}
			before := e.item(t, "call-once")
			second := answerOf(t, invokeLambda(t, fn, payload, ""))
			after := e.item(t, "call-once")

			if n := runs.Load(); n != 1 {
				t.Errorf("the handler ran %d times, want once", n)
			}
			if second == nil || second.Error != "CONFLICT" || second.Retryable || second.Hint == "" {
				t.Fatalf("second answer: %+v", second)
			}
			got := second.Details
			if got.CallID != "call-once" || got.Earlier.Status != audit.StatusDone || got.Earlier.OK == nil || *got.Earlier.OK != tc.ok ||
				got.Earlier.ErrorCode != tc.code || got.Earlier.Stage != tc.stage || !sameInstant(t, str(before, "startedAt"), got.Earlier.StartedAt) {
				t.Errorf("the CONFLICT does not say what the first row says: %+v (row %v)", got, before)
			}
			if !reflect.DeepEqual(before, after) {
				t.Errorf("the refused attempt changed the first attempt's row:\nbefore %v\nafter  %v", before, after)
			}
			if len(e.items(t)) != 1 {
				t.Errorf("%d rows, want 1", len(e.items(t)))
			}
		})
	}
}

// TestAdapterPendingRowOfAnotherAttemptRefuses: a first attempt that never
// finished (its process died, or it still runs) leaves a pending row; a
// second attempt refuses and leaves that row as it is.
func TestAdapterPendingRowOfAnotherAttemptRefuses(t *testing.T) {
	e := newEnv(t)
	var runs atomic.Int32
	fn := newFunction(countingDelete(t, &runs), adapter.WithAuditor(e.auditor(t, audit.Config{})), quietAdapter())
	// The first attempt: a process that dies after its pending row, as in
	// TestAdapterProcessDeathLeavesThePendingRow.
	started := time.Date(2026, 11, 30, 23, 0, 0, 0, time.UTC)
	if prior, err := e.auditor(t, audit.Config{}).Pending(context.Background(), &audit.Row{
		CallID: "call-died", Tool: "broadcast_delete", StartedAt: started, Destructive: true,
	}); prior != nil || err != nil {
		t.Fatalf("Pending: %v, %v", prior, err)
	}
	before := e.item(t, "call-died")

	a := answerOf(t, invokeLambda(t, fn, pathEnvelope(t, "call-died", pathIn{ID: "b-2"}), ""))
	if runs.Load() != 0 {
		t.Error("the handler ran while an earlier attempt's pending row exists")
	}
	if a == nil || a.Error != "CONFLICT" || a.Retryable || a.Details.Earlier.Status != audit.StatusPending ||
		a.Details.Earlier.OK != nil || !sameInstant(t, started.Format(time.RFC3339Nano), a.Details.Earlier.StartedAt) {
		t.Fatalf("answer: %+v", a)
	}
	if after := e.item(t, "call-died"); !reflect.DeepEqual(before, after) {
		t.Errorf("the refused attempt's final row overwrote the pending row:\nbefore %v\nafter  %v", before, after)
	}
}

// TestAdapterDestructiveCallFailsClosedWithoutTheTable: when the pending row
// cannot be written, the destructive tool does not run (no evidence could
// be kept): UNAVAILABLE, retryable, and both rows go to the fallback log.
func TestAdapterDestructiveCallFailsClosedWithoutTheTable(t *testing.T) {
	e := newEnv(t)
	var fb bytes.Buffer
	down := e.auditor(t, audit.Config{Client: clientFor("http://" + closedPort(t)), Fallback: &fb})
	var runs atomic.Int32
	fn := newFunction(countingDelete(t, &runs), adapter.WithAuditor(down), quietAdapter())
	a := answerOf(t, invokeLambdaWithin(t, fn, pathEnvelope(t, "call-down", pathIn{ID: "b-3"}), "", 3*time.Second))
	if runs.Load() != 0 {
		t.Error("the destructive handler ran without a pending row")
	}
	if a == nil || a.Error != "UNAVAILABLE" || !a.Retryable {
		t.Fatalf("answer: %+v", a)
	}
	if n := strings.Count(fb.String(), `"mcpfnAuditFallback":1`); n != 2 {
		t.Fatalf("%d fallback lines, want the pending and the final row:\n%s", n, fb.String())
	}
	// Replayed, the final row completes its own attempt's pending row.
	if _, err := audit.Replay(context.Background(), strings.NewReader(fb.String()), e.auditor(t, audit.Config{}), "broadcast_delete"); err != nil {
		t.Fatal(err)
	}
	it := e.item(t, "call-down")
	if str(it, "status") != audit.StatusDone || str(it, "errorCode") != "UNAVAILABLE" || str(it, "stage") != "before_handle" {
		t.Errorf("replayed row: %v", it)
	}
}

// quietAdapter keeps the adapter's warnings out of test output.
func quietAdapter() adapter.Option {
	return adapter.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
}
