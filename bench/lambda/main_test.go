package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchLambdaTiny runs the whole benchmark at its smallest (two cold
// starts, ten warm invokes per flavour) so that `make bench-lambda` cannot
// rot: every flavour builds, answers its signed envelopes correctly (run
// checks each answer, and the audit row of the audit-on flavours), and the
// report names every flavour and every bound. It asserts nothing about the
// figures: they are measured, never asserted.
func TestBenchLambdaTiny(t *testing.T) {
	var out bytes.Buffer
	err := run(t.Context(), options{
		ColdSamples: 2, WarmCalls: 10, Block: 5,
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
	verdicts := strings.Count(report, "| PASS |") + strings.Count(report, "| MISS (")
	if want := 5 + 2; verdicts != want { // five ratios, the default build's two RSS bounds
		t.Errorf("%d bounds with a verdict, want %d", verdicts, want)
	}
}
