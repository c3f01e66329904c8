package audit_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/audit"
)

// TestRecentRowsAndCallRow: RecentRows lists every row in a time window
// newest first, cut to the limit; CallRow finds one row by writer and id.
func TestRecentRowsAndCallRow(t *testing.T) {
	e := newEnv(t)
	a := e.auditor(t, audit.Config{})
	ctx := context.Background()
	base := baseRow("").StartedAt
	for i := range 5 {
		row := baseRow(fmt.Sprintf("r-%d", i))
		row.StartedAt = base.Add(time.Duration(i) * time.Minute)
		a.Record(ctx, row)
	}
	rows, truncated, err := a.RecentRows(ctx, audit.QueryOptions{Since: base.Add(time.Minute), Until: base.Add(3 * time.Minute)})
	if err != nil || truncated || len(rows) != 3 || rows[0].CallID != "r-3" || rows[2].CallID != "r-1" {
		t.Fatalf("RecentRows window = %v, %v, %v", rows, truncated, err)
	}
	rows, truncated, err = a.RecentRows(ctx, audit.QueryOptions{Limit: 2})
	if err != nil || !truncated || len(rows) != 2 || rows[0].CallID != "r-4" || rows[1].CallID != "r-3" {
		t.Fatalf("RecentRows limit = %v, %v, %v", rows, truncated, err)
	}
	r, ok, err := a.CallRow(ctx, "broadcast_delete", "r-2")
	if err != nil || !ok || r.CallID != "r-2" || r.ArgsPreview == "" {
		t.Fatalf("CallRow = %+v, %v, %v", r, ok, err)
	}
	if _, ok, err := a.CallRow(ctx, "broadcast_get", "r-2"); ok || err != nil {
		t.Fatalf("another writer's CallRow: %v, %v", ok, err)
	}
}
