// Command gateway is `make bench-gateway` (issue 21): mcpfn's gateway
// measured against its anchor, in one run. Both gateways run as processes
// of their own in front of the same function (bench/gateway/echo, under the
// Lambda Runtime Interface Emulator behind the local stack's Invoke API):
//
//   - mcpfn: cmd/mcpfn-gateway built as deployed, JWT auth against the
//     local issuer, every forwarded call signed with the function's call
//     key (read from the Secrets Manager stand-in), audit on against
//     DynamoDB Local (the rows of the calls it refuses), the session key
//     read at cold start;
//   - bare: bench/gateway/forwarder, a go-sdk Streamable HTTP server with no
//     auth and no audit whose tool forwards tools/call with lambda:Invoke;
//   - direct: the same function invoked with lambda:Invoke from the bench,
//     no gateway at all, the baseline the added latency is taken against.
//
// Clients are go-sdk MCP clients over Streamable HTTP, one HTTP transport
// each (mcpfn's with a bearer JWT). Per concurrency level (default 1 and 16
// clients) the flavours take turns in blocks of calls, each turn starting
// with the next flavour, so a change in the machine's load hits them alike.
// It prints p50/p99 per flavour and level, the latency each gateway adds
// (its p50/p99 minus the direct Invoke's at the same level), requests/s,
// cold start (process start → the first tools/call answered, to a fresh
// client), peak RSS (VmHWM) of each gateway process after all its load,
// binary sizes; then the ratios with PASS or MISS.
//
// With -cpuprofile it then runs each gateway once more, built with -tags
// mcpfn_pprof (cmd/mcpfn-gateway/pprof.go), under the highest client count,
// and writes a CPU profile of that process. With -coldprofile it starts
// -coldprofile-n fresh processes of each profiling build, each profiling
// its own cold start up to its first answer (internal/coldprof), and
// merges them into one profile per gateway.
//
//	go run ./bench/gateway                      # make bench-gateway
//	go run ./bench/gateway -n 21 -calls 6000
//	go run ./bench/gateway -cpuprofile gw.pprof # then: go tool pprof -top gw.pprof
//	go run ./bench/gateway -coldprofile cold.pprof
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// options of one run.
type options struct {
	ColdSamples int   // fresh processes per gateway
	Calls       int   // timed calls per flavour per concurrency level
	Block       int   // calls per flavour per turn
	Clients     []int // concurrency levels
	Dir         string
	BinDir      string
	// CPUProfile, when set, is where the mcpfn gateway's CPU profile under
	// the highest client count is written; ProfileTime is its length.
	CPUProfile  string
	ProfileTime time.Duration
	// ColdProfile, when set, is where the merged CPU profile of
	// ColdProfiles cold starts of mcpfn's gateway is written (the
	// forwarder's beside it, "-bare" before the extension).
	ColdProfile  string
	ColdProfiles int
	// ColdAllocs is ColdProfile for the allocations of the cold starts.
	ColdAllocs string
	Progress   io.Writer
}

func main() {
	var o options
	var clients string
	flag.IntVar(&o.ColdSamples, "n", 15, "cold starts per gateway (fresh processes, interleaved)")
	flag.IntVar(&o.Calls, "calls", 3000, "timed calls per flavour per concurrency level")
	flag.IntVar(&o.Block, "block", 300, "calls per flavour per turn")
	flag.StringVar(&clients, "clients", "1,16", "concurrency levels (concurrent clients)")
	flag.StringVar(&o.Dir, "dir", filepath.Join(".local", "bench-gateway"), "the run's directory (logs in logs/)")
	flag.StringVar(&o.BinDir, "bin", "", "where the binaries are built (default DIR/bin)")
	flag.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of the mcpfn gateway under the highest client count to this file")
	flag.DurationVar(&o.ProfileTime, "profile-time", 20*time.Second, "how long the CPU profile runs")
	flag.StringVar(&o.ColdProfile, "coldprofile", "", "write the merged CPU profile of fresh mcpfn gateways, each from its main package's init to its first answer, to this file (the forwarder's beside it)")
	flag.StringVar(&o.ColdAllocs, "coldallocs", "", "as -coldprofile, for a profile of the cold starts' allocations (in cold starts of their own)")
	flag.IntVar(&o.ColdProfiles, "coldprofile-n", 100, "cold starts per gateway merged into -coldprofile (and into -coldallocs)")
	flag.Parse()
	for _, f := range strings.Split(clients, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "bench-gateway: -clients %q: want positive integers, comma separated\n", clients)
			os.Exit(2)
		}
		o.Clients = append(o.Clients, n)
	}
	o.Progress = os.Stderr
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench-gateway:", err)
		os.Exit(1)
	}
}

func (o *options) defaults() {
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	o.ColdSamples = max(o.ColdSamples, 1)
	o.Calls = max(o.Calls, 1)
	o.Block = max(min(o.Block, o.Calls), 1)
	if len(o.Clients) == 0 {
		o.Clients = []int{1, 16}
	}
	slices.Sort(o.Clients)
	o.Clients = slices.Compact(o.Clients)
	if o.BinDir == "" {
		o.BinDir = filepath.Join(o.Dir, "bin")
	}
	if o.ProfileTime <= 0 {
		o.ProfileTime = 20 * time.Second
	}
	o.ColdProfiles = max(o.ColdProfiles, 1)
}

func (o *options) maxClients() int { return o.Clients[len(o.Clients)-1] }
