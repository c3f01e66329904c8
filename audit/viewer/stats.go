package viewer

import (
	"fmt"
	"math"
	"sort"

	"github.com/mcpfn/mcpfn/audit"
)

// bucketBounds are the upper bounds (ms) of the latency histogram's buckets;
// the last bucket takes everything slower.
var bucketBounds = []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000}

// Chart geometry (SVG user units = CSS pixels).
const (
	barWidth    = 10
	barGap      = 2
	chartHeight = 32
)

// toolStats is one tool's line of the statistics table.
type toolStats struct {
	Tool          string
	Calls, Errors int
	ErrorRate     float64
	P50, P95, Max float64 // ms
	Bars          []bar
	Width, Height int
}

// bar is one bucket of the latency chart, laid out.
type bar struct {
	X, Y, W, H int
	Label      string // e.g. "5–10 ms: 3 calls"
}

// statsOf computes per-tool statistics, tools in name order.
func statsOf(rows []audit.Row) []toolStats {
	byTool := map[string][]*audit.Row{}
	for i := range rows {
		byTool[rows[i].Tool] = append(byTool[rows[i].Tool], &rows[i])
	}
	out := make([]toolStats, 0, len(byTool))
	for tool, rs := range byTool {
		s := toolStats{Tool: tool, Calls: len(rs), Width: len(bucketBounds)*(barWidth+barGap) + barWidth, Height: chartHeight}
		durs := make([]float64, 0, len(rs))
		counts := make([]int, len(bucketBounds)+1)
		for _, r := range rs {
			if !r.OK {
				s.Errors++
			}
			if r.Status == audit.StatusPending {
				continue // no duration yet
			}
			durs = append(durs, r.DurationMs)
			counts[sort.SearchFloat64s(bucketBounds, r.DurationMs)]++
		}
		s.ErrorRate = float64(s.Errors) / float64(s.Calls)
		sort.Float64s(durs)
		if len(durs) > 0 {
			s.P50, s.P95, s.Max = quantile(durs, 0.5), quantile(durs, 0.95), durs[len(durs)-1]
		}
		most := 0
		for _, c := range counts {
			most = max(most, c)
		}
		for i, c := range counts {
			h := 0
			if most > 0 && c > 0 {
				h = max(1, int(math.Round(float64(c)/float64(most)*(chartHeight-1))))
			}
			s.Bars = append(s.Bars, bar{X: i * (barWidth + barGap), Y: chartHeight - h, W: barWidth, H: h, Label: bucketLabel(i, c)})
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Tool < out[j].Tool })
	return out
}

// quantile of sorted values, nearest rank.
func quantile(sorted []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func bucketLabel(i, n int) string {
	calls := fmt.Sprintf("%d call", n)
	if n != 1 {
		calls += "s"
	}
	switch {
	case i == 0:
		return fmt.Sprintf("≤ %g ms: %s", bucketBounds[0], calls)
	case i == len(bucketBounds):
		return fmt.Sprintf("> %g ms: %s", bucketBounds[i-1], calls)
	}
	return fmt.Sprintf("%g–%g ms: %s", bucketBounds[i-1], bucketBounds[i], calls)
}
