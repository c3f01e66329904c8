package viewer

import (
	"testing"

	"github.com/mcpfn/mcpfn/audit"
)

// TestStatsOf: counts, error rate, nearest-rank quantiles and one bar per
// bucket, the tallest full height; a pending row counts as a call without a
// duration.
func TestStatsOf(t *testing.T) {
	var rows []audit.Row
	for _, ms := range []float64{0.5, 3, 3, 4, 40, 7000} {
		rows = append(rows, audit.Row{Tool: "a", DurationMs: ms, OK: ms != 40})
	}
	rows = append(rows, audit.Row{Tool: "a", Status: audit.StatusPending, OK: true}, audit.Row{Tool: "b", DurationMs: 1, OK: true})
	st := statsOf(rows)
	if len(st) != 2 || st[0].Tool != "a" || st[1].Tool != "b" {
		t.Fatalf("stats %+v", st)
	}
	a := st[0]
	if a.Calls != 7 || a.Errors != 1 || a.P50 != 3 || a.P95 != 7000 || a.Max != 7000 {
		t.Errorf("a: %+v", a)
	}
	if len(a.Bars) != len(bucketBounds)+1 {
		t.Fatalf("%d bars", len(a.Bars))
	}
	// ≤1: 1, 2–5: 3 (the tallest), 20–50: 1, >5000: 1.
	for i, want := range map[int]int{0: 10, 2: chartHeight - 1, 5: 10, 12: 10} {
		if a.Bars[i].H != want {
			t.Errorf("bar %d (%s): height %d, want %d", i, a.Bars[i].Label, a.Bars[i].H, want)
		}
	}
	if a.Bars[2].Label != "2–5 ms: 3 calls" || a.Bars[1].H != 0 {
		t.Errorf("bars %+v", a.Bars)
	}
}

// TestReadablePreview keeps key order, indents, and shows <, > and & as
// sent; a preview that is not JSON is returned as stored.
func TestReadablePreview(t *testing.T) {
	got := readablePreview(`{"z":"\u003cb\u003e \u0026","a":[1,{"k":null}],"e":{}}`)
	want := "{\n  \"z\": \"<b> &\",\n  \"a\": [\n    1,\n    {\n      \"k\": null\n    }\n  ],\n  \"e\": {}\n}"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if s := `{"cut":"abc`; readablePreview(s) != s {
		t.Errorf("truncated preview changed")
	}
}
