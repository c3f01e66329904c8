package localtest_test

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/localtest"
)

// benchEnv turns on TestLocalStackMeasurements, which takes about a minute
// and is meant to be run alone:
//
//	MCPFN_LOCAL_BENCH=1 go test -count=1 -v -run TestLocalStackMeasurements ./localtest/
const benchEnv = "MCPFN_LOCAL_BENCH"

// bareFunction is a bare aws-lambda-go echo function, the cold-start
// baseline; it is only part of the stack when benchEnv is set.
const bareFunction = "BareFunction"

func benchFunctions() []localtest.FunctionSpec {
	if os.Getenv(benchEnv) == "" {
		return nil
	}
	return []localtest.FunctionSpec{{Name: bareFunction, Package: "./localtest/internal/bare"}}
}

// TestLocalStackMeasurements prints the numbers of docs/benchmarks.md's
// "Local stack" section: cold start under the emulator of a tool function
// against a bare function, warm tools/call latency and throughput through
// the gateway at 1, 8 and 32 concurrent clients, and a tool function's
// peak RSS.
func TestLocalStackMeasurements(t *testing.T) {
	if os.Getenv(benchEnv) == "" {
		t.Skipf("set %s=1 to measure", benchEnv)
	}
	ctx := t.Context()
	out := os.Stdout
	fmt.Fprintf(out, "\nmachine: %s/%s, %d CPUs, Go %s; stack ready after %v\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), stack.ReadyTime().Round(time.Millisecond))
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Fprintf(out, "load average at start: %s", b)
	}

	// Cold start: a fresh emulator process per sample, so each sample is
	// process start → runtime init → first response. The cases take turns
	// within each round, so a change in the machine's load hits them alike.
	const samples = 20
	list := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	get := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"broadcast_get","arguments":{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}}}`)
	cases := []struct {
		fn, what string
		payload  []byte
		ds       []time.Duration
		rss      int64
	}{
		{fn: bareFunction, what: "echo", payload: list},
		{fn: "BroadcastGetFunction", what: "JSON-RPC tools/list", payload: list},
		{fn: "BroadcastGetFunction", what: "JSON-RPC tools/call (GetItem + audit PutItem)", payload: get},
	}
	for range samples {
		for i := range cases {
			c := &cases[i]
			d, r, err := stack.ColdStart(ctx, c.fn, c.payload)
			if err != nil {
				t.Fatal(err)
			}
			c.ds = append(c.ds, d)
			c.rss = max(c.rss, r)
		}
	}
	fmt.Fprintf(out, "\ncold start (emulator process start → first response), %d samples each, interleaved:\n", samples)
	fmt.Fprintf(out, "| function | payload | p50 | min | max | bootstrap peak RSS |\n|---|---|---|---|---|---|\n")
	for _, c := range cases {
		slices.Sort(c.ds)
		fmt.Fprintf(out, "| %s | %s | %v | %v | %v | %.1f MiB |\n", c.fn, c.what, ms(c.ds[len(c.ds)/2]), ms(c.ds[0]), ms(c.ds[len(c.ds)-1]), float64(c.rss)/(1<<20))
	}

	// Warm tools/call through the gateway: broadcast_get of one broadcast
	// (a DynamoDB GetItem and an audit PutItem per call).
	setup := connect(t, "bench-setup")
	created := call(t, setup, "broadcast_create", map[string]any{"channel": "bench", "text": "benchmark"})
	args := map[string]any{"id": created["id"]}
	// Warm enough emulators for the widest level, so the levels measure
	// warm calls only.
	load(t, 32, 3*time.Second, args)
	fmt.Fprintf(out, "\nwarm tools/call broadcast_get through the gateway (each client its own MCP session):\n")
	fmt.Fprintf(out, "| clients | calls | p50 | p99 | calls/s | errors |\n|---|---|---|---|---|---|\n")
	for _, n := range []int{1, 8, 32} {
		r := load(t, n, 10*time.Second, args)
		fmt.Fprintf(out, "| %d | %d | %v | %v | %.0f | %d |\n", n, len(r.lat), ms(r.pct(50)), ms(r.pct(99)), float64(len(r.lat))/r.wall.Seconds(), r.errors)
	}
	peak, n := stack.PeakRSS("BroadcastGetFunction")
	fmt.Fprintf(out, "\nBroadcastGetFunction after the load: %d bootstraps, largest peak RSS (VmHWM) %.1f MiB\n", n, float64(peak)/(1<<20))
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Fprintf(out, "load average at the end: %s", b)
	}
}

type loadResult struct {
	lat    []time.Duration
	errors int
	wall   time.Duration
}

func (r loadResult) pct(p int) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	return r.lat[min(len(r.lat)-1, len(r.lat)*p/100)]
}

// load runs n clients, each calling broadcast_get in a loop for d.
func load(t *testing.T, n int, d time.Duration, args map[string]any) loadResult {
	sessions := make([]*mcp.ClientSession, n)
	for i := range sessions {
		sessions[i] = connect(t, fmt.Sprintf("bench-%d", i))
	}
	var mu sync.Mutex
	var res loadResult
	var wg sync.WaitGroup
	start := time.Now()
	stop := start.Add(d)
	for _, cs := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lat []time.Duration
			errs := 0
			for time.Now().Before(stop) {
				t0 := time.Now()
				r, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "broadcast_get", Arguments: args})
				if err != nil || r.IsError {
					errs++
					if r != nil && errs == 1 {
						b, _ := json.Marshal(r.Content)
						t.Logf("error: %s", b)
					}
					continue
				}
				lat = append(lat, time.Since(t0))
			}
			mu.Lock()
			res.lat = append(res.lat, lat...)
			res.errors += errs
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.wall = time.Since(start)
	slices.Sort(res.lat)
	return res
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
