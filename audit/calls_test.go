package audit_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/audit"
)

// The outcome rule: the function's final row when there is one, else the
// gateway's row, else (a write-ahead row whose process died) the
// function's pending row.
func TestJoinCallsOutcomeRule(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	fn := func(call, status string) audit.Row {
		return audit.Row{CallID: call, Writer: "broadcast_delete", Tool: "broadcast_delete", Status: status, OK: status == audit.StatusDone, StartedAt: t0}
	}
	gw := func(call string) audit.Row {
		return audit.Row{CallID: call, Writer: audit.GatewayWriter, Tool: "broadcast_delete", Status: audit.StatusDone, Stage: "gateway",
			ErrorCode: "TIMEOUT", Outcome: audit.OutcomeUnknown, StartedAt: t0}
	}
	rows := []audit.Row{
		gw("ran-late"), fn("ran-late", audit.StatusDone), // the gateway gave up, the function finished
		fn("died", audit.StatusPending), gw("died"), // the function's process died mid-call
		gw("never-saw"),                                                       // throttled: the function never saw it
		fn("answered", audit.StatusDone),                                      // the usual call
		fn("orphan", audit.StatusPending),                                     // a pending row and nothing else
		fn("replaced", audit.StatusPending), fn("replaced", audit.StatusDone), // two listings appended
	}
	want := []struct {
		call, by  string
		fn, gwRow bool
		outcome   string // the outcome row's status or code
	}{
		{"ran-late", audit.OutcomeByFunction, true, true, audit.StatusDone},
		{"died", audit.OutcomeByGateway, true, true, "TIMEOUT"},
		{"never-saw", audit.OutcomeByGateway, false, true, "TIMEOUT"},
		{"answered", audit.OutcomeByFunction, true, false, audit.StatusDone},
		{"orphan", audit.OutcomeByFunction, true, false, audit.StatusPending},
		{"replaced", audit.OutcomeByFunction, true, false, audit.StatusDone},
	}
	calls := audit.JoinCalls(rows)
	if len(calls) != len(want) {
		t.Fatalf("%d calls, want %d: %+v", len(calls), len(want), calls)
	}
	for i, w := range want {
		c := calls[i]
		o := c.Outcome()
		got := o.Status
		if o.ErrorCode != "" {
			got = o.ErrorCode
		}
		if c.CallID != w.call || c.OutcomeBy != w.by || (c.Function != nil) != w.fn || (c.Gateway != nil) != w.gwRow || got != w.outcome {
			t.Errorf("call %s: by %s, function %v, gateway %v, outcome %s; want %+v", c.CallID, c.OutcomeBy, c.Function != nil, c.Gateway != nil, got, w)
		}
		if rs := c.Rows(); rs[0] != o || len(rs) != btoi(w.fn)+btoi(w.gwRow) {
			t.Errorf("call %s: rows %v, want the outcome first", c.CallID, rs)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// A listing that holds one writer's rows (an entity's: the gateway's row
// names no entity) is completed with the other writer's row by key, and
// printed as one line per call saying which row is the outcome.
func TestCompleteCallsJoinsTheOtherWritersRow(t *testing.T) {
	e := newEnv(t)
	a := e.auditor(t, audit.Config{})
	ctx := context.Background()
	gwRow := func(call string) *audit.Row {
		r := baseRow(call)
		r.Writer, r.Stage, r.OK, r.ErrorCode, r.Outcome, r.Dimensions = audit.GatewayWriter, "gateway", false, "TIMEOUT", audit.OutcomeUnknown, nil
		r.StartedAt = r.StartedAt.Add(-time.Millisecond)
		return r
	}
	a.Record(ctx, gwRow("c-both"))
	a.Record(ctx, baseRow("c-both"))
	a.Record(ctx, baseRow("c-alone"))
	unseen := gwRow("c-unseen")
	unseen.Dimensions = nil
	a.Record(ctx, unseen)

	for name, reader := range map[string]*audit.Auditor{
		"batch get":      a,
		"query by query": audit.New(audit.Config{Table: e.table, Client: queryOnly{e.client}}),
	} {
		t.Run(name, func(t *testing.T) {
			rows, err := reader.EntityRows(ctx, "entityId", "b-1", audit.QueryOptions{})
			if err != nil {
				t.Fatal(err)
			}
			calls := audit.JoinCalls(rows)
			// A call known only by its gateway row gets its function's
			// row, if any, too.
			calls = append(calls, audit.JoinCalls([]audit.Row{*unseen})...)
			if err := reader.CompleteCalls(ctx, calls); err != nil {
				t.Fatal(err)
			}
			by := map[string]audit.Call{}
			for _, c := range calls {
				by[c.CallID] = c
			}
			if c := by["c-both"]; c.Function == nil || c.Gateway == nil || c.OutcomeBy != audit.OutcomeByFunction || c.Gateway.ErrorCode != "TIMEOUT" {
				t.Errorf("c-both: %+v", c)
			}
			if c := by["c-alone"]; c.Function == nil || c.Gateway != nil || c.OutcomeBy != audit.OutcomeByFunction {
				t.Errorf("c-alone: %+v", c)
			}
			if c := by["c-unseen"]; c.Function != nil || c.Gateway == nil || c.OutcomeBy != audit.OutcomeByGateway {
				t.Errorf("c-unseen: %+v", c)
			}
			var b bytes.Buffer
			if err := audit.WriteCalls(&b, calls); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			for _, want := range []string{
				" call=c-both parent=53995c3f42cd8ad8 caller=jwt#https://issuer.example#acme#user-1 entityId=b-1 outcome-row=function gateway-row=TIMEOUT trace=",
				" call=c-alone parent=53995c3f42cd8ad8 caller=jwt#https://issuer.example#acme#user-1 entityId=b-1 trace=",
				" broadcast_delete error TIMEOUT 12.5ms span=" + unseen.SpanID + " call=c-unseen parent=53995c3f42cd8ad8 outcome=unknown caller=jwt#https://issuer.example#acme#user-1 outcome-row=gateway trace=",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("WriteCalls has no %q:\n%s", want, out)
				}
			}
		})
	}
}

// queryOnly is a client without BatchGetItem: CompleteCalls reads row by
// row.
type queryOnly struct{ audit.DynamoAPI }

// Replay keeps each row's writer: a call's two rows printed as fallback
// lines (the table was unreachable for both), each in its writer's log,
// land under their own keys, and the call reads back as one, the
// function's row its outcome.
func TestReplayKeepsACallsTwoRowsApart(t *testing.T) {
	e := newEnv(t)
	var gwLog, fnLog bytes.Buffer
	ctx := context.Background()
	gw := baseRow("c-replayed")
	gw.Writer, gw.Stage, gw.OK, gw.ErrorCode, gw.Outcome, gw.Dimensions = audit.GatewayWriter, "gateway", false, "UNAVAILABLE", audit.OutcomeUnknown, nil
	e.auditor(t, audit.Config{Client: clientFor("http://" + closedPort(t)), Fallback: &gwLog, MaxAttempts: 1}).Record(ctx, gw)
	e.auditor(t, audit.Config{Client: clientFor("http://" + closedPort(t)), Fallback: &fnLog, MaxAttempts: 1}).Record(ctx, baseRow("c-replayed"))
	a := e.auditor(t, audit.Config{})
	for writer, log := range map[string]string{audit.GatewayWriter: gwLog.String(), "broadcast_delete": fnLog.String()} {
		if st, err := audit.Replay(ctx, strings.NewReader(log), a, writer); err != nil || st.Found != 1 || st.Written != 1 {
			t.Fatalf("replay of %s's log: %+v, %v", writer, st, err)
		}
	}
	keys := map[string]bool{}
	for _, it := range e.items(t) {
		keys[str(it, audit.KeyAttribute)] = true
	}
	if !keys["gateway#c-replayed"] || !keys["broadcast_delete#c-replayed"] || len(keys) != 2 {
		t.Fatalf("keys %v, want the gateway's and the function's", keys)
	}
	rows, err := a.EntityRows(ctx, "entityId", "b-1", audit.QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	calls := audit.JoinCalls(rows)
	if err := a.CompleteCalls(ctx, calls); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 || calls[0].OutcomeBy != audit.OutcomeByFunction || calls[0].Gateway == nil || calls[0].Gateway.ErrorCode != "UNAVAILABLE" {
		t.Fatalf("calls %+v, want one, the function's row its outcome, the gateway's beside it", calls)
	}
}
