package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpfn/mcpfn/localtest"
)

// The processes the memory panel and the verdicts name besides functions.
const (
	selfComponent = "stack process"
)

// memSample is one reading of every process's RSS, and of the CPU used
// since the sample before (cpu.go).
type memSample struct {
	at    time.Duration // since the load started
	procs []localtest.ProcessMemory
	cpu   cpuUse
	cpuOK bool // false for the first sample, or without /proc
}

// sampleMemory reads the stack's processes and this one (the stack's own
// process: the Invoke API, the stand-ins, the proxies — and the soak's
// clients) every interval until stop is closed.
func sampleMemory(st *localtest.Stack, start time.Time, interval time.Duration, stop <-chan struct{}) <-chan []memSample {
	out := make(chan []memSample, 1)
	go func() {
		var samples []memSample
		var prevCPU cpuCounters
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			procs := st.Memory()
			if r := selfRSS(); r > 0 {
				procs = append(procs, localtest.ProcessMemory{Component: selfComponent, PID: os.Getpid(), RSS: r})
			}
			pids := append(st.Processes(), os.Getpid())
			for _, p := range procs {
				if p.Component == localtest.DynamoDBLocalComponent {
					pids = append(pids, p.PID)
				}
			}
			counters := readCPU(pids)
			use, ok := between(prevCPU, counters, runtime.NumCPU())
			prevCPU = counters
			samples = append(samples, memSample{at: time.Since(start), procs: procs, cpu: use, cpuOK: ok})
			select {
			case <-stop:
				out <- samples
				return
			case <-tick.C:
			}
		}
	}()
	return out
}

// selfRSS is this process's VmRSS in bytes (0 without /proc).
func selfRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}

// growth is the RSS of one process, or of one component, from the end of
// the warm-up to the end.
type growth struct {
	Component string
	PID       int   // 0 for a component's envelope
	From, To  int64 // bytes: medians of the reference and the final window
}

func (g growth) percent() float64 { return 100 * (float64(g.To)/float64(g.From) - 1) }

// growthOf compares, for every process sampled in both, the median RSS of
// the window just after the warm-up with that of the last window of the
// load. A process started after the warm-up (an execution environment the
// load needed later) has no reference and is left out.
func growthOf(samples []memSample, warmup, end, window time.Duration) []growth {
	return windows(samples, warmup, end, window, func(p localtest.ProcessMemory) (string, int) { return p.Component, p.PID })
}

// envelopeGrowth is growthOf for each component's envelope: at each sample
// the largest RSS of its processes (a function's largest execution
// environment: what the chart draws). A function's verdict is on its
// envelope: an environment that served few calls by the end of the
// warm-up climbs to where the others already are — its own warm-up, not a
// leak, which would lift the envelope too.
func envelopeGrowth(samples []memSample, warmup, end, window time.Duration) []growth {
	return windows(samples, warmup, end, window, func(p localtest.ProcessMemory) (string, int) { return p.Component, 0 })
}

// windows groups each sample's processes by key (the largest RSS of a
// key's processes at a sample) and compares the medians of the two windows.
func windows(samples []memSample, warmup, end, window time.Duration, key func(localtest.ProcessMemory) (string, int)) []growth {
	type k struct {
		comp string
		pid  int
	}
	ref, last := map[k][]float64{}, map[k][]float64{}
	for _, s := range samples {
		top := map[k]int64{}
		for _, p := range s.procs {
			c, pid := key(p)
			top[k{c, pid}] = max(top[k{c, pid}], p.RSS)
		}
		for key, rss := range top {
			switch {
			case s.at >= warmup && s.at < warmup+window:
				ref[key] = append(ref[key], float64(rss))
			case s.at > end-window && s.at <= end+window/4:
				last[key] = append(last[key], float64(rss))
			}
		}
	}
	var out []growth
	for key, r := range ref {
		if l := last[key]; len(l) > 0 {
			out = append(out, growth{Component: key.comp, PID: key.pid, From: int64(median(r)), To: int64(median(l))})
		}
	}
	slices.SortFunc(out, func(a, b growth) int {
		if c := strings.Compare(a.Component, b.Component); c != 0 {
			return c
		}
		return a.PID - b.PID
	})
	return out
}

// series is one line of the memory panels: a component's RSS over time —
// the largest of its processes at each sample (a function has one per
// execution environment).
type series struct {
	Name   string
	Points []point
}

type point struct{ X, Y float64 }

func memorySeries(samples []memSample, components []string) []series {
	var out []series
	for _, c := range components {
		s := series{Name: c}
		for _, m := range samples {
			var top int64
			for _, p := range m.procs {
				if p.Component == c {
					top = max(top, p.RSS)
				}
			}
			if top > 0 {
				s.Points = append(s.Points, point{X: m.at.Seconds(), Y: float64(top) / (1 << 20)})
			}
		}
		if len(s.Points) > 0 {
			out = append(out, s)
		}
	}
	return out
}

// environments counts each function's execution environments in the last
// sample.
func environments(samples []memSample) map[string]int {
	out := map[string]int{}
	if len(samples) == 0 {
		return out
	}
	for _, p := range samples[len(samples)-1].procs {
		out[p.Component]++
	}
	return out
}

// jvmHeapLimit is the -Xmx DynamoDB Local's JVM runs with ("" unknown).
func jvmHeapLimit(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return ""
	}
	for _, arg := range strings.Split(string(b), "\x00") {
		if v, ok := strings.CutPrefix(arg, "-Xmx"); ok {
			return v
		}
	}
	return ""
}

// jvmHeap is DynamoDB Local's live heap after a full collection (jcmd
// GC.run, then jstat -gc), in bytes; an error when the JDK's tools are not
// on PATH.
func jvmHeap(ctx context.Context, pid int) (int64, error) {
	if pid == 0 {
		return 0, fmt.Errorf("no DynamoDB Local process")
	}
	p := strconv.Itoa(pid)
	if out, err := exec.CommandContext(ctx, "jcmd", p, "GC.run").CombinedOutput(); err != nil {
		return 0, fmt.Errorf("jcmd %s GC.run: %v: %s", p, err, out)
	}
	out, err := exec.CommandContext(ctx, "jstat", "-gc", p).Output()
	if err != nil {
		return 0, fmt.Errorf("jstat -gc %s: %v", p, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 2 {
		return 0, fmt.Errorf("jstat -gc %s: %q", p, out)
	}
	head, vals := strings.Fields(lines[0]), strings.Fields(lines[len(lines)-1])
	var kb float64
	for i, h := range head {
		if (h == "S0U" || h == "S1U" || h == "EU" || h == "OU") && i < len(vals) {
			v, _ := strconv.ParseFloat(vals[i], 64)
			kb += v
		}
	}
	return int64(kb * 1024), nil
}
