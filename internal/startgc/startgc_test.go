package startgc

import (
	"runtime/debug"
	"testing"
	"testing/synctest"
	"time"
)

// gcPercent reads the collector's GOGC without changing it.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// TestBeginRaisesUntilEnd: between Begin and its end the collector runs at
// Percent, and at the setting it had before after.
func TestBeginRaisesUntilEnd(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	before := debug.SetGCPercent(123)
	defer debug.SetGCPercent(before)
	end := Begin()
	if got := gcPercent(); got != Percent {
		t.Fatalf("after Begin: GOGC %d, want %d", got, Percent)
	}
	end()
	end() // idempotent
	if got := gcPercent(); got != 123 {
		t.Fatalf("after end: GOGC %d, want 123", got)
	}
}

// TestBeginLeavesTheOperatorsSetting: with GOGC or GOMEMLIMIT set by the
// operator, Begin changes nothing.
func TestBeginLeavesTheOperatorsSetting(t *testing.T) {
	for _, v := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Run(v, func(t *testing.T) {
			t.Setenv("GOGC", "")
			t.Setenv("GOMEMLIMIT", "")
			t.Setenv(v, "200")
			before := debug.SetGCPercent(150)
			defer debug.SetGCPercent(before)
			end := Begin()
			if got := gcPercent(); got != 150 {
				t.Fatalf("GOGC %d, want the 150 it had", got)
			}
			end()
			if got := gcPercent(); got != 150 {
				t.Fatalf("after end: GOGC %d, want 150", got)
			}
		})
	}
}

// TestBeginEndsByItselfAfterLimit: a process that never answers does not
// keep the raised setting past Limit.
func TestBeginEndsByItselfAfterLimit(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	synctest.Test(t, func(t *testing.T) {
		Begin()
		time.Sleep(Limit - time.Millisecond)
		synctest.Wait()
		if got := gcPercent(); got != Percent {
			t.Fatalf("before Limit: GOGC %d, want %d", got, Percent)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if got := gcPercent(); got != 100 {
			t.Fatalf("after Limit: GOGC %d, want 100", got)
		}
	})
}
