package templatetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/taskstore"
)

// taskKeyWriters returns, for each function of the template, the key
// patterns its role may write in the tasks table ("*": any key).
func taskKeyWriters(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for id, res := range raw(t).Resources(serverlessFunction) {
		for g := range grants(t, id, res.Properties) {
			action, target, _ := strings.Cut(g, " on ")
			table, where, _ := strings.Cut(target, " where key like ")
			if table != "TasksTable" || !slices.Contains(auditWriteActions, strings.TrimPrefix(action, "dynamodb:")) {
				continue
			}
			where, _, _ = strings.Cut(where, " with attributes ")
			if where == "" {
				where = "*"
			}
			out[id] = append(out[id], strings.Fields(where)...)
		}
	}
	return out
}

// TestOnlyTheGatewayWritesMarkersSlotsAndOthersTasks (decision 0033): in
// the tasks table a tool function's role may write its own tasks only —
// never a cancel marker (which would cancel any caller's call), a slot of
// the gateway's, or another tool's task — and the gateway's role writes
// them all. Read from the template as text; localtest/iam_test.go runs
// the same attacks through the stack's IAM enforcement.
func TestOnlyTheGatewayWritesMarkersSlotsAndOthersTasks(t *testing.T) {
	writers := taskKeyWriters(t)
	mayWrite := func(key string) []string {
		var ids []string
		for id, patterns := range writers {
			if slices.ContainsFunc(patterns, func(p string) bool { return stringLike(p, key) }) {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids)
		return ids
	}
	for _, key := range []string{"cancel#" + strings.Repeat("A", 43), "gateway#slots#all", "gateway#slots#owner#" + strings.Repeat("A", 43)} {
		if got := mayWrite(key); !slices.Equal(got, []string{"GatewayFunction"}) {
			t.Errorf("roles that may write %s: %v, want GatewayFunction only", key, got)
		}
	}
	for _, e := range repoCatalog(t).Tools {
		key := taskstore.NewID(e.Tool.Name)
		want := []string{"GatewayFunction"}
		if runsTasks(e.Tool) {
			want = append(want, e.Function)
			slices.Sort(want)
		}
		if got := mayWrite(key); !slices.Equal(got, want) {
			t.Errorf("roles that may write %s's task %s: %v, want %v", e.Tool.Name, key, got, want)
		}
	}
}

// TestLongRunningToolsMayReserveConcurrency: a tool whose Timeout is above
// the default gets ReservedConcurrentExecutions from the
// LongRunningConcurrency parameter, only when it is not 0 — its default,
// since reserving fails to deploy on accounts with a low concurrency
// quota; a tool with the default Timeout gets none.
func TestLongRunningToolsMayReserveConcurrency(t *testing.T) {
	rt := raw(t)
	p, ok := rt.Parameters["LongRunningConcurrency"]
	if !ok || p["Type"] != "Number" || fmt.Sprint(p["Default"]) != "0" {
		t.Fatalf("LongRunningConcurrency %v: want a Number, default 0", p)
	}
	cond, _ := json.Marshal(rt.Conditions["ReserveLongRunning"])
	if string(cond) != `{"Fn::Not":[{"Fn::Equals":[{"Ref":"LongRunningConcurrency"},"0"]}]}` {
		t.Errorf("ReserveLongRunning = %s", cond)
	}
	long := 0
	for _, e := range repoCatalog(t).Tools {
		res := mustResource(t, e.Function)
		got, _ := json.Marshal(res.Properties["ReservedConcurrentExecutions"])
		want := "null"
		if time.Duration(e.Tool.TimeoutSeconds)*time.Second > adapter.DefaultTimeout {
			long++
			want = `{"Fn::If":["ReserveLongRunning",{"Ref":"LongRunningConcurrency"},{"Ref":"AWS::NoValue"}]}`
		}
		if string(got) != want {
			t.Errorf("%s (Timeout %d): ReservedConcurrentExecutions %s, want %s", e.Function, e.Tool.TimeoutSeconds, got, want)
		}
	}
	if long == 0 {
		t.Error("no long-running tool in the catalog: the rule is not exercised")
	}
}
