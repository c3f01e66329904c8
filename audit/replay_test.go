package audit_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/audit"
)

// TestReplayWritesOnlyTheLogsWriter (issue 20, M1): a compromised
// broadcast_get function prints fallback lines to its own log — rows of
// broadcast_delete naming another caller, by writer and by tool alone, a
// row of the gateway, a late outcome for another tool's row — beside its
// own genuine row. The operator's replay of that log, declared as
// broadcast_get's, writes the genuine row only: every other line is
// counted foreign, reported, and leaves nothing in the table, as the
// function's own role could not have written them either.
func TestReplayWritesOnlyTheLogsWriter(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	up := e.auditor(t, audit.Config{})
	// The victim's real row, which the forged late outcome aims at.
	victim := baseRow("c-victim")
	victim.AttemptID, victim.Outcome, victim.OK, victim.ErrorCode = "attempt-victim", audit.OutcomeUnknown, false, "TIMEOUT"
	up.Record(ctx, victim)

	var log strings.Builder
	down := e.auditor(t, audit.Config{Client: clientFor("http://" + closedPort(t)), Fallback: &log, MaxAttempts: 1})
	own := baseRow("c-own")
	own.Tool = "broadcast_get"
	down.Record(ctx, own)
	byWriter := baseRow("c-forged-writer")
	byWriter.Writer, byWriter.CallerSubject = "broadcast_delete", "victim"
	down.Record(ctx, byWriter)
	byTool := baseRow("c-forged-tool") // Tool broadcast_delete, no Writer
	byTool.CallerSubject = "victim"
	down.Record(ctx, byTool)
	gw := baseRow("c-forged-gateway")
	gw.Writer, gw.Stage, gw.Dimensions = audit.GatewayWriter, "gateway", nil
	down.Record(ctx, gw)
	finished := time.Date(2026, 11, 29, 12, 0, 5, 0, time.UTC)
	down.Late(ctx, &audit.Row{CallID: "c-victim", Tool: "broadcast_delete", AttemptID: victim.AttemptID, LateOutcome: "ok", FinishedAt: &finished})
	if n := strings.Count(log.String(), audit.FallbackMarker); n != 5 {
		t.Fatalf("%d fallback lines, want 5:\n%s", n, log.String())
	}

	st, err := audit.Replay(ctx, strings.NewReader(log.String()), up, "broadcast_get")
	if st.Found != 5 || st.Written != 1 || st.Foreign != 4 || st.Failed != 0 {
		t.Errorf("stats %+v, want 5 found, 1 written, 4 foreign", st)
	}
	if !errors.Is(err, audit.ErrForeignRow) || !strings.Contains(err.Error(), `writer "broadcast_delete"`) || !strings.Contains(err.Error(), `writer "gateway"`) {
		t.Errorf("error %v, want each foreign row reported", err)
	}
	keys := map[string]bool{}
	for _, it := range e.items(t) {
		keys[str(it, audit.KeyAttribute)] = true
	}
	if len(keys) != 2 || !keys["broadcast_get#c-own"] || !keys["broadcast_delete#c-victim"] {
		t.Errorf("rows %v, want the victim's and broadcast_get's own only", keys)
	}
	if it := e.item(t, "c-victim"); str(it, "lateOutcome") != "" {
		t.Errorf("the forged late outcome reached the victim's row: %v", it["lateOutcome"])
	}
}

// TestReplayNeedsTheLogsWriter: without a writer, or with one no key can
// start with, Replay reads nothing and writes nothing.
func TestReplayNeedsTheLogsWriter(t *testing.T) {
	e := newEnv(t)
	var log strings.Builder
	down := e.auditor(t, audit.Config{Client: clientFor("http://" + closedPort(t)), Fallback: &log, MaxAttempts: 1})
	down.Record(context.Background(), baseRow("c-undeclared"))
	for _, writer := range []string{"", "broadcast_delete#c-undeclared", " "} {
		st, err := audit.Replay(context.Background(), strings.NewReader(log.String()), e.auditor(t, audit.Config{}), writer)
		if err == nil || st.Lines != 0 || st.Written != 0 {
			t.Errorf("writer %q: %+v, %v; want an error before reading", writer, st, err)
		}
	}
	if n := len(e.items(t)); n != 0 {
		t.Errorf("%d rows written without a writer", n)
	}
}
