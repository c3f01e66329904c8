// Command soak is `make soak` (issue 21): the whole local stack — the
// gateway in its own process, every tool function under the Lambda Runtime
// Interface Emulator, DynamoDB Local behind its IAM proxy, the stand-ins —
// driven for a long time at a fixed concurrency by real MCP clients (the
// go-sdk's, with the stack's token), with a realistic mix of the demo's
// tools: reads, writes, the destructive delete, broadcast_digest with
// progress notifications and as a task, and a few bad requests.
//
// At the end it settles the stack and reconciles every call with the audit
// table by call id (each result names its call in _meta, io.mcpfn/callId;
// a task by its taskId): none missing, none duplicated, none extra. It
// samples the memory (RSS) of the gateway's process, of every function's
// execution environments, of DynamoDB Local and of its own process, and
// writes to its output directory:
//
//   - soak.svg: latency percentiles, throughput and RSS over time, per
//     bucket (a minute by default), the warm-up shaded — a soak is read from
//     a picture;
//   - report.txt: the settings, the mix and its outcomes, the
//     reconciliation, the per-bucket table and the verdicts;
//   - buckets.csv: the per-bucket figures, for other tools.
//
// Verdicts (printed, and the exit status): reconciliation exact, no
// unexpected error, the RSS of the gateway and of each function environment
// grown less than 5 % from the end of the warm-up to the end, the p99 of
// the buckets after the warm-up without an upward trend. Times are measured
// on the machine it runs on; a verdict on a shared machine says little.
//
//	go run ./bench/soak                      # make soak (10 minutes)
//	go run ./bench/soak -duration 30m -clients 16
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

// options of one soak.
type options struct {
	Duration time.Duration // of the load, warm-up included
	Warmup   time.Duration // excluded from the memory and p99 verdicts
	Clients  int           // concurrent MCP clients, each one call at a time
	Bucket   time.Duration // width of a point of the chart
	Sample   time.Duration // between two memory samples
	Seed     uint64        // of the mix
	Out      string        // output directory
	BinDir   string        // builds, kept between runs
	// HeapProfile, when set, is where the heap profile of this process
	// (the stack's stand-ins and proxies, and the clients) is written once
	// the load ends: `go tool pprof -sample_index=inuse_space` reads it.
	HeapProfile string
	Progress    io.Writer
}

func main() {
	var o options
	flag.DurationVar(&o.Duration, "duration", 10*time.Minute, "how long the load runs, warm-up included (make soak SOAK=30m)")
	flag.DurationVar(&o.Warmup, "warmup", 0, "the warm-up, left out of the memory and p99 verdicts (default a fifth of -duration, at most 2m)")
	flag.IntVar(&o.Clients, "clients", 16, "concurrent MCP clients, each making one call at a time")
	flag.DurationVar(&o.Bucket, "bucket", 0, "the width of one point of the chart (default 1m, or a tenth of -duration when that is shorter)")
	flag.DurationVar(&o.Sample, "sample", 5*time.Second, "the time between two memory samples")
	flag.Uint64Var(&o.Seed, "seed", 21, "the seed of the mix")
	flag.StringVar(&o.Out, "out", filepath.Join(".local", "soak"), "the output directory: report.txt, soak.svg, buckets.csv, the stack's files")
	flag.StringVar(&o.HeapProfile, "heapprofile", "", "write this process's heap profile (the stack's own process and the clients) here once the load ends")
	flag.StringVar(&o.BinDir, "bin", filepath.Join(".local", "soakbin"), "where the stack builds the functions and the gateway (kept between runs)")
	flag.Parse()
	o.Progress = os.Stderr
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
	fmt.Print(rep.summary())
	if !rep.passed() {
		os.Exit(2)
	}
}

// defaults fills the options a caller left zero.
func (o *options) defaults() {
	if o.Duration <= 0 {
		o.Duration = 10 * time.Minute
	}
	if o.Warmup <= 0 {
		o.Warmup = min(o.Duration/5, 2*time.Minute)
	}
	if o.Clients <= 0 {
		o.Clients = 16
	}
	if o.Bucket <= 0 {
		o.Bucket = min(time.Minute, o.Duration/10)
	}
	if o.Sample <= 0 {
		o.Sample = 5 * time.Second
	}
	if o.Sample > o.Bucket {
		o.Sample = o.Bucket
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
}
