package main

import (
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/localtest"
)

// The soak itself runs for minutes through the whole local stack: it is
// `make soak`, never part of `make test`. These tests keep its pure parts
// honest — the reconciliation that decides "calls == rows", the growth and
// percentile arithmetic of the verdicts, and the chart a person reads.

// TestReconcileMatchesEachCallAndTaskWithExactlyOneRow: a call id named by
// one result and found in one row, a task with one row naming it, is
// matched; everything else is named in its list, and only a run with
// nothing listed is exact.
func TestReconcileMatchesEachCallAndTaskWithExactlyOneRow(t *testing.T) {
	row := func(key, call, task, status string) auditRow {
		return auditRow{key: key, callID: call, taskID: task, status: status}
	}
	exact := reconcile(map[string]int{"c1": 1, "c2": 1}, map[string]int{"t1": 1}, []auditRow{
		row("broadcast_get#c1", "c1", "", "done"),
		row("gateway#c2", "c2", "", "done"),            // a call the function never saw
		row("broadcast_digest#r9", "r9", "t1", "done"), // the task's run: its own call id
	})
	if !exact.exact() || exact.Matched != 3 || exact.Rows != 3 {
		t.Fatalf("exact run: %+v", exact)
	}

	got := reconcile(
		map[string]int{"ok": 1, "lost": 1, "twice": 2, "two-rows": 1},
		map[string]int{"task-ok": 1, "task-lost": 1},
		[]auditRow{
			row("broadcast_get#ok", "ok", "", "done"),
			row("broadcast_get#twice", "twice", "", "done"),
			row("broadcast_get#two-rows", "two-rows", "", "done"),
			row("gateway#two-rows", "two-rows", "", "done"),
			row("broadcast_get#stray", "stray", "", "done"),
			row("broadcast_digest#r1", "r1", "task-ok", "done"),
			row("broadcast_digest#r2", "r2", "task-stray", "done"),
			row("broadcast_get#half", "half", "", "pending"),
		})
	if got.exact() {
		t.Fatalf("a run with every kind of fault is exact: %+v", got)
	}
	want := reconciliation{
		Calls: 4, Tasks: 2, Rows: 8, Matched: 2,
		Missing:    []string{"call lost", "task task-lost"},
		Duplicated: []string{"call twice named by 2 results", "call two-rows has 2 rows"},
		Extra:      []string{"broadcast_digest#r2 (task task-stray)", "broadcast_get#half", "broadcast_get#stray"},
		Pending:    []string{"broadcast_get#half"},
	}
	if got.Calls != want.Calls || got.Tasks != want.Tasks || got.Rows != want.Rows || got.Matched != want.Matched ||
		!slices.Equal(got.Missing, want.Missing) || !slices.Equal(got.Duplicated, want.Duplicated) ||
		!slices.Equal(got.Extra, want.Extra) || !slices.Equal(got.Pending, want.Pending) {
		t.Errorf("reconcile:\n got %+v\nwant %+v", got, want)
	}
}

// TestReconcileCountsEveryRowOnce: the counts alone cannot hide a fault —
// as many rows as calls, but one call without a row and one row of no
// call, is not exact.
func TestReconcileCountsEveryRowOnce(t *testing.T) {
	got := reconcile(map[string]int{"a": 1, "b": 1}, nil, []auditRow{
		{key: "t#a", callID: "a", status: "done"},
		{key: "t#z", callID: "z", status: "done"},
	})
	if got.exact() || len(got.Missing) != 1 || len(got.Extra) != 1 {
		t.Fatalf("%+v", got)
	}
}

// TestGrowthComparesTheWindowAfterWarmupWithTheLast: the median of each
// window, per process; a process born after the warm-up has no reference.
func TestGrowthComparesTheWindowAfterWarmupWithTheLast(t *testing.T) {
	const mb = 1 << 20
	var samples []memSample
	for s := 0; s <= 100; s += 5 {
		at := time.Duration(s) * time.Second
		procs := []localtest.ProcessMemory{
			{Component: localtest.GatewayComponent, PID: 1, RSS: int64(20+s/10) * mb}, // 20 → 30 MiB
			{Component: "BroadcastGetFunction", PID: 2, RSS: 10 * mb},                 // flat
		}
		if s >= 60 {
			procs = append(procs, localtest.ProcessMemory{Component: "BroadcastGetFunction", PID: 3, RSS: 9 * mb})
		}
		samples = append(samples, memSample{at: at, procs: procs})
	}
	got := growthOf(samples, 20*time.Second, 100*time.Second, 15*time.Second)
	if len(got) != 2 {
		t.Fatalf("growth of %d processes, want 2 (the late one has no reference): %+v", len(got), got)
	}
	// BroadcastGetFunction sorts before GatewayFunction.
	if g := got[0]; g.PID != 2 || g.percent() != 0 {
		t.Errorf("flat function: %+v (%+.1f %%)", g, g.percent())
	}
	// Reference: samples at 20, 25, 30 s → 22, 22, 23 MiB, median 22;
	// last: 90, 95, 100 s → 29, 29, 30 MiB, median 29.
	if g := got[1]; g.PID != 1 || g.From != 22*mb || g.To != 29*mb {
		t.Errorf("gateway: %+v, want 22 → 29 MiB", g)
	}
}

// TestEnvelopeIsAFunctionsLargestEnvironment: an environment that served
// little by the end of the warm-up climbs to where the others are (its own
// warm-up): it grows, the function's envelope does not; an environment
// that keeps growing past the others lifts the envelope.
func TestEnvelopeIsAFunctionsLargestEnvironment(t *testing.T) {
	const mb = 1 << 20
	var samples []memSample
	for s := 0; s <= 100; s += 5 {
		samples = append(samples, memSample{at: time.Duration(s) * time.Second, procs: []localtest.ProcessMemory{
			{Component: "GetFunction", PID: 1, RSS: 22 * mb},
			{Component: "GetFunction", PID: 2, RSS: int64(min(16+s/10, 22)) * mb}, // catching up
			{Component: "ListFunction", PID: 3, RSS: 22 * mb},
			{Component: "ListFunction", PID: 4, RSS: int64(20+s/10) * mb}, // 20 → 30: past the other
		}})
	}
	env := envelopeGrowth(samples, 20*time.Second, 100*time.Second, 15*time.Second)
	if len(env) != 2 || env[0].Component != "GetFunction" || env[0].percent() != 0 {
		t.Fatalf("envelopes %+v: GetFunction's should be flat", env)
	}
	if g := env[1]; g.Component != "ListFunction" || g.From != 22*mb || g.To != 29*mb {
		t.Errorf("ListFunction's envelope %+v, want 22 → 29 MiB", g)
	}
	perProcess := growthOf(samples, 20*time.Second, 100*time.Second, 15*time.Second)
	if g := perProcess[1]; g.PID != 2 || g.percent() <= 0 {
		t.Errorf("the catching-up environment %+v should show its growth per process", g)
	}
}

// TestCPUBetweenSamples: cores used by the machine and by the stack's
// processes over an interval; a process born in the interval counts from
// its start, one gone by its end drops out.
func TestCPUBetweenSamples(t *testing.T) {
	prev := cpuCounters{machineBusy: 1000, machineTotal: 4000, procs: map[int]uint64{1: 100, 2: 50, 3: 70}, ok: true}
	// 2 cores, 500 ticks each elapsed (1000 in all); 800 of them busy.
	cur := cpuCounters{machineBusy: 1800, machineTotal: 5000, procs: map[int]uint64{1: 300, 2: 150, 4: 100}, load1: 3.5, ok: true}
	got, ok := between(prev, cur, 2)
	// The stack: 200 + 100 + 100 (pid 4, new) = 400 ticks of 500 per core.
	if !ok || got.Machine != 1.6 || got.Stack != 0.8 || got.Load1 != 3.5 {
		t.Errorf("between = %+v, %v; want machine 1.6, stack 0.8, load 3.5", got, ok)
	}
	if _, ok := between(cpuCounters{}, cur, 2); ok {
		t.Error("no earlier sample, yet a reading")
	}
	if runtime.GOOS == "linux" {
		if c := readCPU([]int{os.Getpid()}); !c.ok || c.machineTotal == 0 || c.machineBusy > c.machineTotal {
			t.Errorf("readCPU of this process: %+v", c)
		} else if _, ok := c.procs[os.Getpid()]; !ok {
			t.Errorf("readCPU did not read this process's /proc/%d/stat", os.Getpid())
		}
	}
}

// TestPercentileIsNearestRank: the p-th percentile is a value of the data.
func TestPercentileIsNearestRank(t *testing.T) {
	s := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct{ p, want float64 }{{50, 5}, {90, 9}, {99, 10}, {100, 10}, {1, 1}} {
		if got := percentile(s, c.p); got != c.want {
			t.Errorf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
	if got := percentile(nil, 50); got != 0 {
		t.Errorf("p50 of nothing = %v", got)
	}
}

// TestChartIsWellFormedSVGWithEveryPanel: the chart parses as XML, names
// every series in a legend, shades the warm-up in every panel, and keeps
// every point inside the plot (a bad scale would draw off the picture); a
// warm-up point above a scale fitted to the rest is on the edge, labelled.
func TestChartIsWellFormedSVGWithEveryPanel(t *testing.T) {
	lat := []series{
		{Name: "p50", Points: []point{{30, 4}, {90, 5}, {150, 4.5}}},
		{Name: "p99", Points: []point{{10, 4500}, {90, 52.5}, {150, 47}}}, // a cold start in the warm-up
	}
	rss := []series{{Name: "Gateway <&>", Points: []point{{0, 20}, {60, 21}, {180, 21}}}}
	svg := svgChart(`soak "title" <3m>`, []string{"line one", "line & two"}, []panel{
		{title: "Latency", unit: "ms", series: lat, dots: true, fitAfterWarmup: true},
		{title: "RSS", unit: "MiB", series: rss},
		{title: "Empty", unit: "MiB"},
	}, 180, 36)

	dec := xml.NewDecoder(strings.NewReader(svg))
	var texts []string
	warmups, polylines := 0, 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, svg)
		}
		switch e := tok.(type) {
		case xml.CharData:
			texts = append(texts, string(e))
		case xml.StartElement:
			attr := map[string]string{}
			for _, a := range e.Attr {
				attr[a.Name.Local] = a.Value
			}
			switch e.Name.Local {
			case "rect":
				if attr["fill"] == "#eeeeee" {
					warmups++
				}
			case "polyline":
				polylines++
				for _, pt := range strings.Fields(attr["points"]) {
					var x, y float64
					if _, err := fmt.Sscanf(pt, "%g,%g", &x, &y); err != nil || x < plotLeft || x > plotRight || y < chartTop || y > float64(chartHeight(3)) {
						t.Errorf("point %q outside the plot", pt)
					}
				}
			}
		}
	}
	all := strings.Join(texts, "|")
	for _, want := range []string{`soak "title" <3m>`, "line & two", "p50", "p99", "Gateway <&>", "warm-up", "minutes since the load started", "↑ 4500"} {
		if !strings.Contains(all, want) {
			t.Errorf("the chart does not say %q", want)
		}
	}
	if warmups != 3 {
		t.Errorf("%d shaded warm-ups, want one per panel", warmups)
	}
	if polylines != 3 {
		t.Errorf("%d lines, want 3 (an empty panel draws none)", polylines)
	}
}

// TestNiceScaleCoversTheMaximum: the top tick is at or above the data, in
// about five steps of 1, 2 or 5 × 10ⁿ.
func TestNiceScaleCoversTheMaximum(t *testing.T) {
	for _, m := range []float64{0.03, 0.9, 1, 4.2, 17, 99, 100, 101, 1234, 55555} {
		step, top := niceScale(m)
		if top < m || top/step > 10 || top/step < 2 {
			t.Errorf("niceScale(%v) = step %v, top %v", m, step, top)
		}
		mant := step / math.Pow(10, math.Floor(math.Log10(step)))
		if !slices.Contains([]float64{1, 2, 5}, math.Round(mant*1e6)/1e6) {
			t.Errorf("niceScale(%v): step %v is not 1, 2 or 5 × 10ⁿ", m, step)
		}
	}
}
