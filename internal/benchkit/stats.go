package benchkit

import (
	"slices"
	"time"
)

// Percentile returns the p-th percentile (0–100) of sorted durations by the
// nearest rank at or above p: sorted[⌊n·p/100⌋], capped at the largest. The
// bench reports have always used this rank, so figures stay comparable
// across runs of different lengths. Zero for no samples.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	i := int(float64(n) * p / 100)
	return sorted[max(0, min(n-1, i))]
}

// Median of sorted durations: the middle one, or the mean of the middle two
// for an even count (the cold starts' few samples make the difference
// visible). Zero for no samples.
func Median(sorted []time.Duration) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	return (sorted[(n-1)/2] + sorted[n/2]) / 2
}

// Mean of durations, zero for none.
func Mean(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}

// Sorted returns a sorted copy of ds.
func Sorted(ds []time.Duration) []time.Duration {
	out := slices.Clone(ds)
	slices.Sort(out)
	return out
}
