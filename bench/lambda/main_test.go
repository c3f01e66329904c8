package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchLambdaTiny runs the whole benchmark at its smallest (twice: one
// cold start, ten warm invokes per flavour each time) so that `make
// bench-lambda` cannot rot: every flavour builds, answers its signed
// envelopes correctly (run checks each answer, and the audit row of the
// audit-on flavours), each run's report names every flavour and every
// bound, and the summary judges every bound on the runs' median. It
// asserts nothing about the figures: they are measured, never asserted.
func TestBenchLambdaTiny(t *testing.T) {
	var out bytes.Buffer
	err := run(t.Context(), options{
		ColdSamples: 1, WarmCalls: 10, Block: 5, Runs: 2,
		Dir: t.TempDir(),
		// Shared with localtest's tests, so that go build finds the
		// functions up to date.
		BinDir: filepath.Join("..", "..", ".local", "testbin"),
	}, &out)
	if err != nil {
		t.Fatal(err)
	}
	report := out.String()
	t.Log("\n" + report)
	for _, f := range flavours {
		if !strings.Contains(report, "| "+f.label+" | ") {
			t.Errorf("no row for %s", f.label)
		}
	}
	if !strings.Contains(report, "| post-runtime cold / warm |") {
		t.Error("no post-runtime column")
	}
	if !strings.Contains(report, "| sent → the runtime has the invoke |") {
		t.Error("no table of where a warm invoke's time goes")
	}
	verdicts := strings.Count(report, "| PASS |") + strings.Count(report, "| MISS (")
	if want := (5 + 2) * 3; verdicts != want { // five ratios and the default build's two RSS bounds, per run and in the summary
		t.Errorf("%d bounds with a verdict, want %d", verdicts, want)
	}
	if !strings.Contains(report, "## median of 2 runs") || !strings.Contains(report, "| warm p50, audit on / audit off | ") {
		t.Error("no summary over the runs")
	}
}
