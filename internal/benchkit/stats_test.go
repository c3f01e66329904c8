package benchkit

import (
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

func ms(n ...int) []time.Duration {
	out := make([]time.Duration, len(n))
	for i, v := range n {
		out[i] = time.Duration(v) * time.Millisecond
	}
	return out
}

func TestPercentileIsTheNearestRankAtOrAbove(t *testing.T) {
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond
	}
	for _, c := range []struct {
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{nil, 50, 0},
		{ms(7), 0, 7 * time.Millisecond},
		{ms(7), 99, 7 * time.Millisecond},
		{ms(1, 2, 3, 4), 50, 3 * time.Millisecond},
		{hundred, 50, 51 * time.Millisecond},
		{hundred, 99, 100 * time.Millisecond},
		{hundred, 100, 100 * time.Millisecond}, // capped at the largest
	} {
		if got := Percentile(c.sorted, c.p); got != c.want {
			t.Errorf("Percentile(%d samples, %v) = %v, want %v", len(c.sorted), c.p, got, c.want)
		}
	}
}

func TestMedianAveragesTheMiddleTwoOfAnEvenCount(t *testing.T) {
	for _, c := range []struct {
		sorted []time.Duration
		want   time.Duration
	}{
		{nil, 0},
		{ms(5), 5 * time.Millisecond},
		{ms(1, 2, 9), 2 * time.Millisecond},
		{ms(1, 2, 4, 9), 3 * time.Millisecond},
	} {
		if got := Median(c.sorted); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.sorted, got, c.want)
		}
	}
}

func TestMeanAndSorted(t *testing.T) {
	if got := Mean(nil); got != 0 {
		t.Errorf("Mean(nil) = %v", got)
	}
	if got := Mean(ms(1, 2, 6)); got != 3*time.Millisecond {
		t.Errorf("Mean = %v, want 3ms", got)
	}
	in := ms(3, 1, 2)
	got := Sorted(in)
	if got[0] != time.Millisecond || got[2] != 3*time.Millisecond || in[0] != 3*time.Millisecond {
		t.Errorf("Sorted(%v) = %v: want a sorted copy, the input untouched", in, got)
	}
}

func TestRatioOfNothingIsZero(t *testing.T) {
	if got := Ratio(3*time.Millisecond, 2*time.Millisecond); got != 1.5 {
		t.Errorf("Ratio = %v, want 1.5", got)
	}
	if got := Ratio(int64(5), 0); got != 0 {
		t.Errorf("Ratio(5, 0) = %v, want 0", got)
	}
}

func TestBoundsSayHowFarOver(t *testing.T) {
	var b strings.Builder
	WriteBounds(&b, []Bound{
		{What: "at the bound", Got: 1.5, Limit: 1.5, Unit: "×"},
		{What: "over", Got: 1.8, Limit: 1.5, Unit: "×"},
	})
	out := b.String()
	for _, want := range []string{"| at the bound | 1.50× | ≤ 1.5× | PASS |", "| over | 1.80× | ≤ 1.5× | MISS (20 % over) |"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
}

func TestProcessFiguresOfThisProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc")
	}
	// Its own CPU so far: at least the test binary's start, never negative.
	if got := ProcessCPU(os.Getpid()); got < 0 {
		t.Errorf("ProcessCPU = %v", got)
	}
	if got := PeakRSS(os.Getpid()); got <= 0 {
		t.Errorf("PeakRSS = %d, want the test's own", got)
	}
	if got := ThreadsCPU(os.Getpid()); got <= 0 {
		t.Errorf("ThreadsCPU = %v, want the test's own", got)
	}
	if ProcessCPU(-1) != 0 || PeakRSS(-1) != 0 || ThreadsCPU(-1) != 0 {
		t.Error("a process that does not exist has no CPU and no RSS")
	}
}
