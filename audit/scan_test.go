package audit_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

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

// scanRecorder is a RecentRows client that records each Scan's segment and,
// when items is set, describes the table as holding that many items.
type scanRecorder struct {
	*dynamodb.Client
	mu       sync.Mutex
	segments [][2]int32 // segment, total; total 0 for an unsplit Scan
}

func (c *scanRecorder) Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	c.mu.Lock()
	c.segments = append(c.segments, [2]int32{aws.ToInt32(in.Segment), aws.ToInt32(in.TotalSegments)})
	c.mu.Unlock()
	return c.Client.Scan(ctx, in, optFns...)
}

// describedAs is a scanRecorder whose DescribeTable reports items.
type describedAs struct {
	*scanRecorder
	items int64
}

func (c describedAs) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	out, err := c.scanRecorder.Client.DescribeTable(ctx, in, optFns...)
	if err == nil {
		out.Table.ItemCount = aws.Int64(c.items)
	}
	return out, err
}

// noDescribe is a recorder without DescribeTable.
type noDescribe struct {
	audit.DynamoAPI
	rec *scanRecorder
}

func (c noDescribe) Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	return c.rec.Scan(ctx, in, optFns...)
}

// TestRecentRowsReadsTheTableInSegments: DynamoDB Local loads every item a
// Scan page could return before it answers, so a plain Scan of a long
// session's table took minutes, or failed; RecentRows splits the table in
// segments of about a thousand items by its item count (16 segments when the
// client cannot describe the table), reads them one after the other and
// still finds every row; past the bound on items read it stops and says so.
func TestRecentRowsReadsTheTableInSegments(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	writer := e.auditor(t, audit.Config{})
	base := baseRow("").StartedAt
	for i := range 40 {
		row := baseRow(fmt.Sprintf("s-%02d", i))
		row.StartedAt = base.Add(time.Duration(i) * time.Second)
		writer.Record(ctx, row)
	}
	read := func(t *testing.T, client audit.DynamoAPI) ([]audit.Row, bool) {
		t.Helper()
		a := e.auditor(t, audit.Config{Client: client})
		rows, truncated, err := a.RecentRows(ctx, audit.QueryOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return rows, truncated
	}
	wantSegments := func(t *testing.T, rec *scanRecorder, total int32) {
		t.Helper()
		seen := map[int32]bool{}
		for _, s := range rec.segments {
			if s[1] != total {
				t.Fatalf("a Scan of segment %d of %d, want %d segments (%v)", s[0], s[1], total, rec.segments)
			}
			seen[s[0]] = true
		}
		if len(seen) != int(total) {
			t.Errorf("segments read: %v, want each of %d", rec.segments, total)
		}
	}

	t.Run("by the item count", func(t *testing.T) {
		rec := &scanRecorder{Client: e.client}
		rows, truncated := read(t, describedAs{rec, 5400})
		if len(rows) != 40 || truncated || rows[0].CallID != "s-39" || rows[39].CallID != "s-00" {
			t.Fatalf("%d rows (truncated %v), want all 40 newest first", len(rows), truncated)
		}
		wantSegments(t, rec, 5)
	})
	t.Run("a small table in one Scan", func(t *testing.T) {
		rec := &scanRecorder{Client: e.client}
		if rows, _ := read(t, describedAs{rec, 40}); len(rows) != 40 {
			t.Fatalf("%d rows, want 40", len(rows))
		}
		if len(rec.segments) != 1 || rec.segments[0][1] != 0 {
			t.Errorf("scans %v, want one unsplit Scan", rec.segments)
		}
	})
	t.Run("without DescribeTable", func(t *testing.T) {
		rec := &scanRecorder{Client: e.client}
		if rows, _ := read(t, noDescribe{rec, rec}); len(rows) != 40 {
			t.Fatalf("%d rows, want 40", len(rows))
		}
		wantSegments(t, rec, 16)
	})
	t.Run("bounded", func(t *testing.T) {
		audit.SetMaxScanned(t, 10)
		rec := &scanRecorder{Client: e.client}
		rows, truncated := read(t, describedAs{rec, 40_000})
		if !truncated || len(rows) < 10 || len(rows) >= 40 {
			t.Fatalf("%d rows (truncated %v), want the first segments' rows, at least 10, and truncated", len(rows), truncated)
		}
	})
}
