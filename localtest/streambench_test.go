package localtest_test

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/calltoken"
	"github.com/mcpfn/mcpfn/localtest"
	"github.com/mcpfn/mcpfn/wire"

	"github.com/mcpfn/mcpfn/localtest/internal/progress"
)

// TestStreamingLatency prints docs/benchmarks.md's "Streaming vs JSON"
// figures: a plain tools/call (the handler reports nothing) through the
// local gateway, answered with JSON after an Invoke, and the same call
// with a progress token, answered on SSE after an InvokeWithResponseStream
// through the local stack's streaming route. The two take turns, so a
// change in the machine's load hits both alike.
func TestStreamingLatency(t *testing.T) {
	if os.Getenv(benchEnv) == "" {
		t.Skipf("set %s=1 to measure", benchEnv)
	}
	st, dir := streamStack(t)
	cs := connectTo(t, st)
	const warmup, n = 20, 300
	var plain, streamed []time.Duration
	for i := range warmup + n {
		for _, stream := range []bool{false, true} {
			p := &mcp.CallToolParams{Name: progress.Name, Arguments: map[string]any{"quiet": true}}
			if stream {
				p.SetProgressToken(i)
			}
			start := time.Now()
			res, err := cs.CallTool(t.Context(), p)
			d := time.Since(start)
			if err != nil || res.IsError {
				t.Fatalf("call %d (stream %v): %v %v", i, stream, err, res)
			}
			if i < warmup {
				continue
			}
			if stream {
				streamed = append(streamed, d)
			} else {
				plain = append(plain, d)
			}
		}
	}
	fmt.Printf("\nmachine: %s/%s, %d CPUs, Go %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Printf("load average: %s", b)
	}
	q := func(ds []time.Duration, p float64) time.Duration {
		slices.Sort(ds)
		return ds[int(p*float64(len(ds)-1))].Round(10 * time.Microsecond)
	}
	fmt.Printf("%-34s %9s %9s %9s   (n=%d each)\n", "plain tools/call through the gateway", "p50", "p90", "p99", n)
	fmt.Printf("%-34s %9v %9v %9v\n", "JSON (Invoke)", q(plain, .5), q(plain, .9), q(plain, .99))
	fmt.Printf("%-34s %9v %9v %9v\n", "SSE (InvokeWithResponseStream)", q(streamed, .5), q(streamed, .9), q(streamed, .99))
	fmt.Printf("%-34s %9v\n", "added by streaming (p50)", q(streamed, .5)-q(plain, .5))

	// The same call on the Invoke API alone (a signed envelope, no
	// gateway): Invoke against InvokeWithResponseStream with Stream set.
	keys, err := localtest.LoadKeys(dir)
	if err != nil {
		t.Fatal(err)
	}
	lc := lambdaClientOf(st)
	envelope := func(stream bool) []byte {
		env := wire.Envelope{
			Version: wire.EnvelopeVersion, CallID: wire.NewCallID(),
			Params: wire.EnvelopeParams{Name: progress.Name, Arguments: json.RawMessage(`{"quiet":true}`)},
			MCP:    wire.EnvelopeMCP{Era: wire.EraOf("2026-07-28"), Method: "tools/call", ProtocolVersion: "2026-07-28"},
		}
		if stream {
			env.Stream = &wire.StreamRequest{Progress: true}
		}
		b, _ := json.Marshal(env)
		signed, err := keys.SignEnvelope(b, &calltoken.Identity{Subject: localtest.DemoSubject, AuthMethod: "jwt", Issuer: st.Issuer()}, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return signed
	}
	plain, streamed = nil, nil
	for i := range warmup + n {
		start := time.Now()
		if _, err := lc.Invoke(t.Context(), &lambda.InvokeInput{FunctionName: aws.String(progressFunction), Payload: envelope(false)}); err != nil {
			t.Fatal(err)
		}
		d := time.Since(start)
		start = time.Now()
		out, err := lc.InvokeWithResponseStream(t.Context(), &lambda.InvokeWithResponseStreamInput{FunctionName: aws.String(progressFunction), Payload: envelope(true)})
		if err != nil {
			t.Fatal(err)
		}
		for range out.GetStream().Events() {
		}
		out.GetStream().Close()
		if i >= warmup {
			plain, streamed = append(plain, d), append(streamed, time.Since(start))
		}
	}
	fmt.Printf("%-34s %9s %9s %9s\n", "the same call on the Invoke API", "p50", "p90", "p99")
	fmt.Printf("%-34s %9v %9v %9v\n", "Invoke", q(plain, .5), q(plain, .9), q(plain, .99))
	fmt.Printf("%-34s %9v %9v %9v\n", "InvokeWithResponseStream", q(streamed, .5), q(streamed, .9), q(streamed, .99))
}
