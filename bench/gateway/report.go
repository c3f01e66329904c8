package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mcpfn/mcpfn/internal/benchkit"
)

// Issue 21's bounds on mcpfn's gateway against the bare forwarder.
const (
	maxAddedP50 = 1.5
	maxCold     = 1.3
	maxRSS      = 1.5
)

func clientsLabel(n int) string {
	if n == 1 {
		return "1 client"
	}
	return fmt.Sprintf("%d clients", n)
}

// added is what a gateway adds to the direct Invoke at one level: its
// percentile minus the direct one's (a difference of percentiles, both
// from the same interleaved run).
func added(res *[nFlavours]result, i, n int, p float64) time.Duration {
	return benchkit.Percentile(res[i].levels[n].lat, p) - benchkit.Percentile(res[direct].levels[n].lat, p)
}

func addedMean(res *[nFlavours]result, i, n int) time.Duration {
	return benchkit.Mean(res[i].levels[n].lat) - benchkit.Mean(res[direct].levels[n].lat)
}

func report(out io.Writer, o options, res *[nFlavours]result, loadStart, loadEnd string) {
	fmt.Fprintln(out, benchkit.MachineLine(loadStart, loadEnd))
	fmt.Fprintln(out)
	fmt.Fprintf(out, "one function (bench/gateway/echo under the Lambda RIE, behind the local stack's Invoke API) behind each gateway, each gateway a process of its own; "+
		"clients: go-sdk MCP clients over Streamable HTTP, one connection pool each, one call at a time each; "+
		"%d timed calls per flavour per level, the flavours taking turns in blocks of %d; "+
		"cold start: median of %d fresh processes per gateway, interleaved (process start → a fresh client's first tools/call answered; listening: → the port accepts; "+
		"cold CPU: the process's threads' run time by the answer, and by listening, median); "+
		"CPU per call: the held gateway process's user + system CPU over the warm phase / the calls it served; "+
		"peak RSS: VmHWM of the held process after all its load (and the largest of the cold ones after their first answer); binaries built as deployed (-trimpath -tags lambda.norpc -ldflags='-s -w -buildid=', static)\n\n",
		o.Calls, o.Block, o.ColdSamples)

	head := "| flavour | cold start median (min–max) | listening | cold CPU (to listening) |"
	rule := "|---|---|---|---|"
	for _, n := range o.Clients {
		l := clientsLabel(n)
		head += fmt.Sprintf(" %s p50 | p99 | req/s |", l)
		rule += "---|---|---|"
	}
	head += " CPU per call | peak RSS under load (cold) | binary |"
	rule += "---|---|---|"
	fmt.Fprintln(out, head)
	fmt.Fprintln(out, rule)
	for i := range nFlavours {
		x := &res[i]
		row := "| " + labels[i] + " | "
		if len(x.cold) > 0 {
			row += fmt.Sprintf("%s (%s–%s) | %s | %s (%s) |", benchkit.MS(benchkit.Median(x.cold)), benchkit.MS(x.cold[0]), benchkit.MS(x.cold[len(x.cold)-1]), benchkit.MS(benchkit.Median(x.listen)),
				benchkit.MS(benchkit.Median(x.coldCPU)), benchkit.MS(benchkit.Median(x.listenCPU)))
		} else {
			row += "– | – | – |"
		}
		for _, n := range o.Clients {
			l := x.levels[n]
			row += fmt.Sprintf(" %s | %s | %.0f |", benchkit.MS(benchkit.Percentile(l.lat, 50)), benchkit.MS(benchkit.Percentile(l.lat, 99)), l.perSecond())
		}
		if x.size > 0 {
			row += fmt.Sprintf(" %d µs | %.1f MiB (%.1f) | %.1f MB |", x.cpuPerCall.Microseconds(), benchkit.MiB(x.rss), benchkit.MiB(x.coldRSS), float64(x.size)/1e6)
		} else {
			row += " – | – | – |"
		}
		fmt.Fprintln(out, row)
	}

	fmt.Fprint(out, "\nadded latency: the gateway's round trip minus the direct Invoke's, same level, same run (difference of the percentiles; mean for the published anchor's average):\n\n")
	head, rule = "| gateway |", "|---|"
	for _, n := range o.Clients {
		head += fmt.Sprintf(" %s: added p50 | added p99 | added mean |", clientsLabel(n))
		rule += "---|---|---|"
	}
	fmt.Fprintln(out, head)
	fmt.Fprintln(out, rule)
	for _, i := range []int{bare, mcpfnGW} {
		row := "| " + labels[i] + " |"
		for _, n := range o.Clients {
			row += fmt.Sprintf(" %s | %s | %s |", benchkit.MS(added(res, i, n, 50)), benchkit.MS(added(res, i, n, 99)), benchkit.MS(addedMean(res, i, n)))
		}
		fmt.Fprintln(out, row)
	}

	var bounds []benchkit.Bound
	var unmeasured []string
	for _, n := range o.Clients {
		b := added(res, bare, n, 50)
		if b <= 0 {
			unmeasured = append(unmeasured, fmt.Sprintf("added p50 at %s: the bare forwarder's is %s, no ratio", clientsLabel(n), benchkit.MS(b)))
			continue
		}
		bounds = append(bounds, benchkit.Bound{What: "added p50 at " + clientsLabel(n) + ", mcpfn / bare", Got: benchkit.Ratio(added(res, mcpfnGW, n, 50), b), Limit: maxAddedP50, Unit: "×"})
	}
	bounds = append(bounds,
		benchkit.Bound{What: "cold start, mcpfn / bare", Got: benchkit.Ratio(benchkit.Median(res[mcpfnGW].cold), benchkit.Median(res[bare].cold)), Limit: maxCold, Unit: "×"},
		benchkit.Bound{What: "peak RSS under load, mcpfn / bare", Got: benchkit.Ratio(res[mcpfnGW].rss, res[bare].rss), Limit: maxRSS, Unit: "×"},
	)
	fmt.Fprint(out, "\nissue 21 bounds (mcpfn's gateway against the bare forwarder):\n\n")
	benchkit.WriteBounds(out, bounds)
	for _, u := range unmeasured {
		fmt.Fprintln(out, "- "+u)
	}

	fmt.Fprint(out, "\nfor reference (no bound), mcpfn / bare:\n\n")
	var refs []string
	for _, n := range o.Clients {
		b := added(res, bare, n, 99)
		if b > 0 {
			refs = append(refs, fmt.Sprintf("added p99 at %s %.2f×", clientsLabel(n), benchkit.Ratio(added(res, mcpfnGW, n, 99), b)))
		}
		refs = append(refs, fmt.Sprintf("req/s at %s %.2f×", clientsLabel(n), res[mcpfnGW].levels[n].perSecond()/res[bare].levels[n].perSecond()))
	}
	refs = append(refs,
		fmt.Sprintf("listening %.2f×", benchkit.Ratio(benchkit.Median(res[mcpfnGW].listen), benchkit.Median(res[bare].listen))),
		fmt.Sprintf("cold CPU %.2f×", benchkit.Ratio(benchkit.Median(res[mcpfnGW].coldCPU), benchkit.Median(res[bare].coldCPU))),
		fmt.Sprintf("CPU per call %.2f×", benchkit.Ratio(res[mcpfnGW].cpuPerCall, res[bare].cpuPerCall)),
		fmt.Sprintf("cold peak RSS %.2f×", benchkit.Ratio(res[mcpfnGW].coldRSS, res[bare].coldRSS)),
		fmt.Sprintf("binary %.2f×", benchkit.Ratio(res[mcpfnGW].size, res[bare].size)))
	fmt.Fprintln(out, strings.Join(refs, "; "))
}
