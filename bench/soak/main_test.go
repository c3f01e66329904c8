package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSoakSmoke runs the soak for 20 seconds so that `make soak` cannot
// rot: every operation of the mix is made through the whole stack, and at
// the end every call has exactly its row and nothing was unexpected — the
// driver and the reconciliation work. It asserts nothing about latency,
// throughput or memory: those are measured by `make soak`, never asserted
// in a test.
func TestSoakSmoke(t *testing.T) {
	out := t.TempDir()
	rep, err := run(t.Context(), options{
		Duration: 20 * time.Second, Clients: 4, Bucket: 5 * time.Second, Sample: time.Second, Seed: 21,
		Out: out,
		// Shared with localtest's tests, so that go build finds the
		// functions up to date.
		BinDir: filepath.Join("..", "..", ".local", "testbin"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + rep.summary())
	if !rep.rec.exact() || rep.scanErr != nil {
		t.Errorf("reconciliation: %+v (%v)", rep.rec, rep.scanErr)
	}
	if rep.nProblem != 0 {
		t.Errorf("%d unexpected outcomes: %s", rep.nProblem, strings.Join(rep.problems, "\n"))
	}
	if rep.progressGot != rep.progressWant {
		t.Errorf("%d progress notifications for %d pages", rep.progressGot, rep.progressWant)
	}
	seen := map[string]bool{}
	for _, op := range rep.ops {
		seen[op.op] = op.N > 0
	}
	for _, m := range mix {
		if !seen[m.op] && m.op != opTask { // a task may not fit in 20 s of 4 clients' mix; the rest always does
			t.Errorf("no %s in the run", m.op)
		}
	}
	for _, f := range []string{"report.txt", "buckets.csv", "soak.svg"} {
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil || len(b) == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}
