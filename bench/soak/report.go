package main

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/mcpfn/mcpfn/localtest"
)

// Bounds of the verdicts (issue 21).
const (
	maxGrowthPercent = 5.0  // RSS after the warm-up, gateway and each environment
	maxP99Trend      = 1.25 // median p99 of the last half of the buckets over the first half's
)

// report is one soak's figures and verdicts.
type report struct {
	o               options
	out, stackDir   string
	ready           time.Duration
	started         time.Time
	loadEnd         time.Duration
	buckets         []bucketRow
	ops             []opRow
	rec             reconciliation
	scanErr         error
	growth          []growth // per process
	envelopes       []growth // per component: its largest process
	envs            map[string]int
	mem             []memSample
	problems        []string
	nProblem        int
	progressWant    int64
	progressGot     int64
	heap            int64
	heapErr         error
	heapLimit       string // -Xmx
	jvmRSS          int64
	files           []fileSize
	p99Trend        float64
	verdicts        []verdict
	functionNames   []string
	worstFunction   *growth
	gatewayGrowth   *growth
	requests, calls int
}

type bucketRow struct {
	from, width time.Duration
	latencyStats
	problems int
	mem      map[string]int64 // component → largest RSS at the bucket's last sample
	cpu      cpuUse           // mean of the bucket's samples; Load1 at its last
	cpuOK    bool
}

type opRow struct {
	op string
	latencyStats
	problems int
}

type fileSize struct {
	name string
	size int64
}

type verdict struct {
	name, value string
	pass        bool
}

// analyse turns what the recorder and the sampler collected into rows and
// verdicts.
func (r *report) analyse(rec *recorder, mem []memSample) {
	o := r.o
	r.mem = mem
	rec.mu.Lock()
	for i, b := range rec.buckets {
		from := time.Duration(i) * o.Bucket
		row := bucketRow{from: from, width: min(o.Bucket, max(r.o.Duration-from, time.Second)), latencyStats: statsOf(b.latencies), problems: b.problems, mem: map[string]int64{}}
		var cpuN int
		for _, m := range mem {
			if m.at > from && m.at <= from+o.Bucket+o.Sample/2 {
				clear(row.mem)
				for _, p := range m.procs {
					row.mem[p.Component] = max(row.mem[p.Component], p.RSS)
				}
				if m.cpuOK {
					cpuN++
					row.cpu.Machine += m.cpu.Machine
					row.cpu.Stack += m.cpu.Stack
					row.cpu.Load1 = m.cpu.Load1
				}
			}
		}
		if cpuN > 0 {
			row.cpu.Machine /= float64(cpuN)
			row.cpu.Stack /= float64(cpuN)
			row.cpuOK = true
		}
		r.buckets = append(r.buckets, row)
		r.requests += row.N
	}
	for _, op := range slices.Sorted(maps.Keys(rec.ops)) {
		l := rec.ops[op]
		r.ops = append(r.ops, opRow{op: op, latencyStats: statsOf(l.latencies), problems: l.problems})
	}
	r.calls = len(rec.calls)
	r.problems, r.nProblem = slices.Clone(rec.problems), rec.nProblem
	rec.mu.Unlock()
	r.progressWant, r.progressGot = rec.progressWant.Load(), rec.progressGot.Load()

	window := max(o.Bucket, 3*o.Sample)
	r.growth = growthOf(mem, o.Warmup, r.loadEnd, window)
	r.envelopes = envelopeGrowth(mem, o.Warmup, r.loadEnd, window)
	r.envs = environments(mem)
	for i := range r.envelopes {
		g := &r.envelopes[i]
		switch g.Component {
		case localtest.GatewayComponent:
			r.gatewayGrowth = g
		case localtest.DynamoDBLocalComponent, selfComponent:
		default:
			if r.worstFunction == nil || g.percent() > r.worstFunction.percent() {
				r.worstFunction = g
			}
		}
	}
	seen := map[string]bool{}
	for _, m := range mem {
		for _, p := range m.procs {
			if c := p.Component; !seen[c] && c != localtest.GatewayComponent && c != localtest.DynamoDBLocalComponent && c != selfComponent {
				seen[c] = true
				r.functionNames = append(r.functionNames, c)
			}
		}
	}
	slices.Sort(r.functionNames)

	// p99 trend: the buckets after the warm-up, last half against first.
	var p99s []float64
	for _, b := range r.buckets {
		if b.from >= o.Warmup && b.N > 0 {
			p99s = append(p99s, b.P99)
		}
	}
	if h := len(p99s) / 2; h > 0 {
		r.p99Trend = median(p99s[len(p99s)-h:]) / median(p99s[:h])
	}
	r.verdicts = r.judge()
}

func (r *report) judge() []verdict {
	var v []verdict
	rc := r.rec
	recon := fmt.Sprintf("%d calls + %d tasks = %d rows; missing %d, duplicated %d, extra %d, pending %d",
		rc.Calls, rc.Tasks, rc.Rows, len(rc.Missing), len(rc.Duplicated), len(rc.Extra), len(rc.Pending))
	if r.scanErr != nil {
		recon = "the audit table could not be read: " + r.scanErr.Error()
	}
	v = append(v, verdict{"reconciliation", recon, r.scanErr == nil && rc.exact()})
	v = append(v, verdict{"unexpected errors", fmt.Sprintf("%d of %d requests", r.nProblem, r.requests), r.nProblem == 0})
	v = append(v, verdict{"progress notifications", fmt.Sprintf("%d received for %d pages read", r.progressGot, r.progressWant), r.progressGot == r.progressWant})
	if g := r.gatewayGrowth; g != nil {
		v = append(v, verdict{"gateway RSS after warm-up", fmt.Sprintf("%s → %s (%+.1f %%, bound %.0f %%)", mib(g.From), mib(g.To), g.percent(), maxGrowthPercent), g.percent() < maxGrowthPercent})
	} else {
		v = append(v, verdict{"gateway RSS after warm-up", "not measured (no /proc, or a run shorter than its windows)", false})
	}
	if g := r.worstFunction; g != nil {
		v = append(v, verdict{"functions' RSS after warm-up", fmt.Sprintf("worst %s (its largest environment) %s → %s (%+.1f %%, bound %.0f %%)", g.Component, mib(g.From), mib(g.To), g.percent(), maxGrowthPercent), g.percent() < maxGrowthPercent})
	} else {
		v = append(v, verdict{"functions' RSS after warm-up", "not measured", false})
	}
	if r.p99Trend > 0 {
		v = append(v, verdict{"p99 per bucket after warm-up", fmt.Sprintf("last half / first half %.2f× (bound %.2f×)", r.p99Trend, maxP99Trend), r.p99Trend <= maxP99Trend})
	} else {
		v = append(v, verdict{"p99 per bucket after warm-up", "too few buckets after the warm-up", false})
	}
	return v
}

func (r *report) passed() bool {
	for _, v := range r.verdicts {
		if !v.pass {
			return false
		}
	}
	return true
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func passMiss(ok bool) string {
	if ok {
		return "PASS"
	}
	return "MISS"
}

// summary is what the command prints: the verdicts and where the rest is.
func (r *report) summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "soak: %v, %d clients, %d requests (%d calls, %d tasks)\n", r.o.Duration, r.o.Clients, r.requests, r.rec.Calls, r.rec.Tasks)
	for _, v := range r.verdicts {
		fmt.Fprintf(&b, "  %-30s %s  %s\n", v.name, passMiss(v.pass), v.value)
	}
	fmt.Fprintf(&b, "report: %s\nchart:  %s\n", filepath.Join(r.out, "report.txt"), filepath.Join(r.out, "soak.svg"))
	return b.String()
}

// write writes report.txt, buckets.csv and soak.svg to the output directory.
func (r *report) write() error {
	if err := os.WriteFile(filepath.Join(r.out, "report.txt"), []byte(r.text()), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(r.out, "buckets.csv"), []byte(r.csv()), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(r.out, "soak.svg"), []byte(r.chart()), 0o644)
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func (r *report) text() string {
	var b strings.Builder
	o := r.o
	host, _ := os.Hostname()
	fmt.Fprintf(&b, "mcpfn soak, %s on %s (%d cores, %s/%s, %s), load average at the end %s\n",
		r.started.UTC().Format(time.RFC3339), host, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version(), loadAverage())
	fmt.Fprintf(&b, "settings: %d clients, %v of load (warm-up %v), a point every %v, memory every %v, seed %d; the stack was ready after %v\n\n",
		o.Clients, o.Duration, o.Warmup, o.Bucket, o.Sample, o.Seed, r.ready.Round(time.Millisecond))

	b.WriteString("VERDICTS\n")
	for _, v := range r.verdicts {
		fmt.Fprintf(&b, "  %-30s %s  %s\n", v.name, passMiss(v.pass), v.value)
	}

	b.WriteString("\nMIX: requests per operation (task: its whole run, created to completed, polls included)\n")
	fmt.Fprintf(&b, "  %-12s %8s %7s %9s %9s %9s %9s %10s\n", "operation", "n", "share", "p50 ms", "p90 ms", "p99 ms", "max ms", "unexpected")
	for _, op := range r.ops {
		share := ""
		if op.op != opTask {
			share = fmt.Sprintf("%.1f%%", 100*float64(op.N)/float64(max(r.requests, 1)))
		}
		fmt.Fprintf(&b, "  %-12s %8d %7s %9.1f %9.1f %9.1f %9.1f %10d\n", op.op, op.N, share, op.P50, op.P90, op.P99, op.Max, op.problems)
	}

	b.WriteString("\nBUCKETS: every request, by the bucket it ended in; RSS at the bucket's last sample (functions: the largest environment);\n")
	fmt.Fprintf(&b, "  CPU in cores of %d, the bucket's mean: the machine's, the stack's (its processes and the clients'), the rest's; load: 1-minute average\n", runtime.NumCPU())
	fmt.Fprintf(&b, "  %-9s %9s %8s %8s %8s %8s %9s %10s %10s %10s %10s %6s %6s %6s %6s\n", "from", "requests", "req/s", "p50 ms", "p90 ms", "p99 ms", "max ms", "gateway", "functions", "DDB Local", "stack", "CPU", "stack", "rest", "load")
	for _, bk := range r.buckets {
		fnTop := int64(0)
		for c, v := range bk.mem {
			if slices.Contains(r.functionNames, c) {
				fnTop = max(fnTop, v)
			}
		}
		cpu := fmt.Sprintf(" %6s %6s %6s %6s", "?", "?", "?", "?")
		if bk.cpuOK {
			cpu = fmt.Sprintf(" %6.2f %6.2f %6.2f %6.1f", bk.cpu.Machine, bk.cpu.Stack, max(bk.cpu.Machine-bk.cpu.Stack, 0), bk.cpu.Load1)
		}
		fmt.Fprintf(&b, "  %-9v %9d %8.1f %8.1f %8.1f %8.1f %9.1f %10s %10s %10s %10s%s\n", bk.from, bk.N, float64(bk.N)/bk.width.Seconds(), bk.P50, bk.P90, bk.P99, bk.Max,
			mib(bk.mem[localtest.GatewayComponent]), mib(fnTop), mib(bk.mem[localtest.DynamoDBLocalComponent]), mib(bk.mem[selfComponent]), cpu)
	}

	fmt.Fprintf(&b, "\nMEMORY after the warm-up: median RSS of the window [%v, %v) → of the load's last window\n", o.Warmup, o.Warmup+max(o.Bucket, 3*o.Sample))
	b.WriteString("  each component (a function: its largest execution environment at each sample)\n")
	for _, g := range r.envelopes {
		fmt.Fprintf(&b, "  %-32s %10s → %10s  %+6.1f %%\n", g.Component, mib(g.From), mib(g.To), g.percent())
	}
	fmt.Fprintln(&b, "  (judged: the gateway and each function; DynamoDB Local holds the tables in memory and grows with them;")
	fmt.Fprintln(&b, "   the stack process also holds this soak's record of every call id.)")
	b.WriteString("  each process alive at both windows\n")
	for _, g := range r.growth {
		fmt.Fprintf(&b, "  %-32s pid %-8d %10s → %10s  %+6.1f %%\n", g.Component, g.PID, mib(g.From), mib(g.To), g.percent())
	}
	var envs []string
	for _, c := range r.functionNames {
		envs = append(envs, fmt.Sprintf("%s %d", c, r.envs[c]))
	}
	fmt.Fprintf(&b, "  execution environments at the end: %s\n", strings.Join(envs, ", "))

	b.WriteString("\nDYNAMODB LOCAL\n")
	fmt.Fprintf(&b, "  JVM RSS at the end %s; ", mib(r.jvmRSS))
	if r.heapErr != nil {
		fmt.Fprintf(&b, "live heap unknown (%v)\n", r.heapErr)
	} else {
		fmt.Fprintf(&b, "live heap after a full GC %s (the JVM's limit -Xmx%s)\n", mib(r.heap), r.heapLimit)
	}
	fmt.Fprintf(&b, "  the audit table: %d rows, read in %v (a consistent Scan in %d segments)\n", r.rec.Rows, r.rec.ScanTime.Round(time.Millisecond), r.rec.Segments)

	b.WriteString("\nFILES (the record; the X-Ray and OTLP stand-ins hold the latest 4,096 documents each in memory)\n")
	for _, f := range r.files {
		fmt.Fprintf(&b, "  %-12s %s\n", f.name, mib(f.size))
	}
	fmt.Fprintf(&b, "  the stack's directory: %s\n", r.stackDir)

	if r.nProblem > 0 {
		fmt.Fprintf(&b, "\nUNEXPECTED (the first %d of %d)\n", len(r.problems), r.nProblem)
		for _, p := range r.problems {
			fmt.Fprintf(&b, "  %s\n", p)
		}
	}
	for _, l := range []struct {
		name string
		ids  []string
	}{{"MISSING", r.rec.Missing}, {"DUPLICATED", r.rec.Duplicated}, {"EXTRA ROWS", r.rec.Extra}, {"PENDING ROWS", r.rec.Pending}} {
		if len(l.ids) > 0 {
			fmt.Fprintf(&b, "\n%s (%d, the first 20)\n", l.name, len(l.ids))
			for _, id := range l.ids[:min(20, len(l.ids))] {
				fmt.Fprintf(&b, "  %s\n", id)
			}
		}
	}
	return b.String()
}

func (r *report) csv() string {
	var b strings.Builder
	b.WriteString("from_s,requests,requests_per_s,p50_ms,p90_ms,p99_ms,max_ms,unexpected,gateway_rss_mib,functions_max_rss_mib,dynamodb_local_rss_mib,stack_rss_mib,cpu_machine_cores,cpu_stack_cores,load1\n")
	for _, bk := range r.buckets {
		fnTop := int64(0)
		for c, v := range bk.mem {
			if slices.Contains(r.functionNames, c) {
				fnTop = max(fnTop, v)
			}
		}
		fmt.Fprintf(&b, "%.0f,%d,%.2f,%.2f,%.2f,%.2f,%.2f,%d,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f\n", bk.from.Seconds(), bk.N, float64(bk.N)/bk.width.Seconds(), bk.P50, bk.P90, bk.P99, bk.Max, bk.problems,
			float64(bk.mem[localtest.GatewayComponent])/(1<<20), float64(fnTop)/(1<<20), float64(bk.mem[localtest.DynamoDBLocalComponent])/(1<<20), float64(bk.mem[selfComponent])/(1<<20),
			bk.cpu.Machine, bk.cpu.Stack, bk.cpu.Load1)
	}
	return b.String()
}

// chart is the soak's picture: latency percentiles and throughput per
// bucket, RSS per sample.
func (r *report) chart() string {
	var p50, p90, p99, rate series
	p50.Name, p90.Name, p99.Name, rate.Name = "p50", "p90", "p99", "requests/s"
	for _, bk := range r.buckets {
		if bk.N == 0 {
			continue
		}
		x := (bk.from + bk.width/2).Seconds()
		p50.Points = append(p50.Points, point{x, bk.P50})
		p90.Points = append(p90.Points, point{x, bk.P90})
		p99.Points = append(p99.Points, point{x, bk.P99})
		rate.Points = append(rate.Points, point{x, float64(bk.N) / bk.width.Seconds()})
	}
	procs := memorySeries(r.mem, append([]string{localtest.GatewayComponent}, r.functionNames...))
	for i := range procs {
		procs[i].Name = strings.TrimSuffix(procs[i].Name, "Function")
	}
	big := memorySeries(r.mem, []string{selfComponent, localtest.DynamoDBLocalComponent})
	cpu := []series{{Name: "the machine"}, {Name: "the stack and clients"}, {Name: "everything else"}}
	for _, m := range r.mem {
		if m.cpuOK {
			x := m.at.Seconds()
			cpu[0].Points = append(cpu[0].Points, point{x, m.cpu.Machine})
			cpu[1].Points = append(cpu[1].Points, point{x, m.cpu.Stack})
			cpu[2].Points = append(cpu[2].Points, point{x, max(m.cpu.Machine-m.cpu.Stack, 0)})
		}
	}
	var verdicts []string
	for _, v := range r.verdicts {
		verdicts = append(verdicts, v.name+" "+passMiss(v.pass))
	}
	title := fmt.Sprintf("mcpfn soak: %v, %d clients, %d requests, reconciliation %s", r.o.Duration, r.o.Clients, r.requests, map[bool]string{true: "exact", false: "NOT exact"}[r.scanErr == nil && r.rec.exact()])
	sub := []string{
		fmt.Sprintf("%s · %d cores · warm-up %v shaded · details in report.txt", r.started.UTC().Format("2006-01-02 15:04 MST"), runtime.NumCPU(), r.o.Warmup),
		strings.Join(verdicts[:min(3, len(verdicts))], " · "),
		strings.Join(verdicts[min(3, len(verdicts)):], " · "),
	}
	return svgChart(title, sub, []panel{
		{title: fmt.Sprintf("Latency per request, per %v (scaled to the points after the warm-up)", r.o.Bucket), unit: "ms", series: []series{p50, p90, p99}, dots: true, fitAfterWarmup: true},
		{title: fmt.Sprintf("Throughput, per %v", r.o.Bucket), unit: "requests/s", series: []series{rate}, dots: true},
		{title: "RSS: the gateway's process, and each function's largest execution environment", unit: "MiB", series: procs},
		{title: "RSS: the stack's own process (stand-ins, proxies, the soak's clients) and DynamoDB Local's JVM", unit: "MiB", series: big},
		{title: fmt.Sprintf("CPU, in cores of %d: what else ran on the machine shows here", runtime.NumCPU()), unit: "cores", series: cpu},
	}, r.o.Duration.Seconds(), r.o.Warmup.Seconds())
}
