// Command lambda is `make bench-lambda` (issue 12): an echo tool written with
// mcpfn's public API (bench/lambda/mcpfn_echo) against the same echo on bare
// aws-lambda-go (localtest/internal/bare), both under the Lambda Runtime
// Interface Emulator in one run, on the local stack's machinery (package
// localtest: the emulator, DynamoDB Local with template.yaml's audit table,
// the Secrets Manager stand-in holding the call key).
//
// Per flavour it prints the cold start (median of -n fresh emulators, the
// flavours taking turns so that a change in the machine's load hits them
// alike), warm p50/p99 and invokes/s at one client (again in interleaved
// blocks), peak RSS (VmHWM) and the bootstrap's size as `make build` builds
// it; where each warm invoke's time goes (the Runtime API proxy's
// timestamps); then the ratios issue 12's "Must hold" names (audit on /
// off: issue 21's 1.25×), each with its bound and PASS or MISS. Every
// payload is a signed envelope, as the gateway sends.
//
// -runs N repeats the whole measurement N times on the same stack and
// judges each bound on its median over the runs, with the spread: runs of
// the same code differ by 20 % on a shared machine. -flavours default
// measures bare and the default build only. -cpuprofile DIR builds the
// default build's echo with the mcpfn_benchprofile tag and writes a CPU
// profile of each held environment's warm calls (every goroutine of the
// bootstrap) to DIR; its figures are not comparable with a measured run's.
//
// Times are what the caller sees on Lambda: the answer comes at the
// runtime's response (localtest's early release), not when the emulator
// answers after every extension is done; that time after the response is
// reported apart, as post-runtime (Lambda's PostRuntimeExtensionsDuration),
// and each timed invoke waits, untimed, for the previous one to finish.
//
//	go run ./bench/lambda            # make bench-lambda
//	go run ./bench/lambda -n 31 -warm 5000
//	go run ./bench/lambda -runs 5    # make bench-lambda RUNS=5
//	go run ./bench/lambda -flavours default -cpuprofile .local/bench/prof
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/calltoken"
	"github.com/mcpfn/mcpfn/internal/benchkit"
	"github.com/mcpfn/mcpfn/internal/secretsstandin"
	"github.com/mcpfn/mcpfn/localtest"
	"github.com/mcpfn/mcpfn/wire"
)

// options of one run.
type options struct {
	ColdSamples int           // fresh emulators per flavour
	WarmCalls   int           // timed warm invokes per flavour
	Block       int           // warm invokes per flavour per turn
	Runs        int           // whole measurements, each bound judged on the median
	Gap         time.Duration // idle time before each warm invoke (untimed)
	Flavours    string        // "all", or "default": bare and the default build
	CPUProfile  string        // a directory: profile the default build's warm calls
	Dir         string        // the stack's directory (logs)
	BinDir      string        // builds, kept between runs
	Progress    io.Writer
}

// flavour is one function under test.
type flavour struct {
	name  string // the function's name (and the call tokens' audience)
	label string
	pkg   string
	tags  []string
	mcpfn bool // an mcpfn tool: signed envelopes are verified, answers checked
	audit bool
}

const (
	bareFn = "BenchBare"
	// The default build's pair, which the bounds are judged on.
	offFn = "BenchMcpfnAuditOff"
	onFn  = "BenchMcpfnAuditOn"

	echoPkg = "./bench/lambda/mcpfn_echo"
	// untimedCalls are the held environment's calls before the timed
	// ones (past its cold start and first connections).
	untimedCalls = 20
	echoTool     = "echo"
	keySecret    = "BenchEchoCallKey"
	maxRSSMiB    = 24
	invokeWait   = 30 * time.Second
)

// flavours are the bare baseline, then mcpfn's echo per build flavour, each
// with audit off and on. The first echo pair is the default build, which
// the bounds are judged on; a build flavour is one more echo line.
var flavours = slices.Concat(
	[]flavour{{name: bareFn, label: "bare aws-lambda-go", pkg: "./localtest/internal/bare"}},
	echo(""),
	echo("TracingSDKs", "mcpfn_xraysdk", "mcpfn_otel"),
	echo("XRaySDK", "mcpfn_xraysdk"),
	echo("OTel", "mcpfn_otel"),
)

// echo is the pair of flavours (audit off, audit on) of the echo tool built
// with tags; name tells the functions apart ("" for the default build).
func echo(name string, tags ...string) []flavour {
	label := "mcpfn"
	if len(tags) > 0 {
		label += " `" + strings.Join(tags, ",") + "`"
	}
	return []flavour{
		{name: "BenchMcpfn" + name + "AuditOff", label: label + ", audit off", pkg: echoPkg, tags: tags, mcpfn: true},
		{name: "BenchMcpfn" + name + "AuditOn", label: label + ", audit on (DynamoDB Local)", pkg: echoPkg, tags: tags, mcpfn: true, audit: true},
	}
}

func main() {
	var o options
	flag.IntVar(&o.ColdSamples, "n", 21, "cold starts per flavour (fresh emulators, interleaved)")
	flag.IntVar(&o.WarmCalls, "warm", 3000, "timed warm invokes per flavour (one client)")
	flag.IntVar(&o.Block, "block", 250, "warm invokes per flavour per turn")
	flag.DurationVar(&o.Gap, "gap", 0, "idle time before each timed warm invoke, once the environment is free (untimed; 0: at once, as Lambda hands a free environment the next invoke)")
	flag.IntVar(&o.Runs, "runs", 1, "whole measurements; each bound is judged on its median over the runs")
	flag.StringVar(&o.Flavours, "flavours", "all", `"all", or "default": bare and the default build's audit off and on`)
	flag.StringVar(&o.CPUProfile, "cpuprofile", "", "directory: profile the default build's warm calls (a build with the mcpfn_benchprofile tag)")
	flag.StringVar(&o.Dir, "dir", filepath.Join(".local", "bench"), "the stack's directory (function logs in logs/)")
	flag.StringVar(&o.BinDir, "bin", "", "where the functions are built (default DIR/bin)")
	flag.Parse()
	o.Progress = os.Stderr
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench-lambda:", err)
		os.Exit(1)
	}
}

// result is one flavour's figures. Durations are caller-visible (up to the
// runtime's response); post* are the times after it until the environment
// was free (the local PostRuntimeExtensionsDuration).
type result struct {
	cold, coldPost []time.Duration
	warm, warmPost []time.Duration
	// warmToPost are the warm invokes' times from sending to the runtime's
	// response POST reaching the Runtime API (the proxy's timestamp): on
	// Lambda, where the caller's answer starts; locally the emulator's
	// accepting it and the router follow, sharing the machine's two cores
	// with DynamoDB Local while an after-response write runs.
	warmToPost []time.Duration
	// The warm invokes' steps as the proxy saw them: sent → the runtime's
	// next returned the invoke, sent → the audit extension's next returned
	// its INVOKE event (audit on), the runtime's next → its response POST,
	// and the POST → the caller's answer.
	warmToNext, warmToExt, warmNextToPost, warmPostToAnswer []time.Duration
	// warmBusy is the sum of the warm invokes' times from sending to the
	// environment being free again: what one environment's throughput is.
	warmBusy time.Duration
	rss      int64 // the largest VmHWM of every bootstrap of the flavour
	warmRSS  int64 // VmHWM of the warm bootstrap after all its invokes
	size     int64
}

func (r *result) coldMedian() time.Duration { return benchkit.Median(r.cold) }

// median and pct are benchkit's (the ranks every bench report uses).
var median = benchkit.Median

func pct(sorted []time.Duration, p int) time.Duration { return benchkit.Percentile(sorted, float64(p)) }

// selected returns the flavours a run measures.
func selected(o options) ([]flavour, error) {
	switch o.Flavours {
	case "", "all":
		if o.CPUProfile == "" {
			return flavours, nil
		}
		fallthrough // a profile is of the default build
	case "default":
		return flavours[:3], nil
	}
	return nil, fmt.Errorf(`-flavours %q: want "all" or "default"`, o.Flavours)
}

func run(ctx context.Context, o options, out io.Writer) error {
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	o.ColdSamples = max(o.ColdSamples, 1)
	o.WarmCalls = max(o.WarmCalls, 1)
	o.Block = max(min(o.Block, o.WarmCalls), 1)
	o.Runs = max(o.Runs, 1)
	if o.BinDir == "" {
		o.BinDir = filepath.Join(o.Dir, "bin")
	}
	sel, err := selected(o)
	if err != nil {
		return err
	}
	if o.CPUProfile != "" {
		if o.CPUProfile, err = filepath.Abs(o.CPUProfile); err != nil {
			return err
		}
		if err := os.MkdirAll(o.CPUProfile, 0o755); err != nil {
			return err
		}
	}

	// The call key every mcpfn flavour verifies with: random per run, put
	// into the stand-in once the stack is up (each function reads it at its
	// cold start, on its first invoke).
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	secret := hex.EncodeToString(key)
	var specs []localtest.FunctionSpec
	for _, f := range sel {
		env := map[string]string{
			calltoken.EnvKeySecret: secretsstandin.ARN(keySecret),
			// Lambda's default tracing mode (the local stack's is "both").
			audit.EnvTracing: audit.TracingXRay,
		}
		if !f.audit {
			env[audit.EnvTable] = ""
		}
		tags := f.tags
		if f.mcpfn && o.CPUProfile != "" {
			// mcpfn_echo/profile.go: the held environment's timed calls.
			tags = append(slices.Clone(tags), "mcpfn_benchprofile")
			env["MCPFN_BENCH_CPUPROFILE"] = filepath.Join(o.CPUProfile, f.name+".pprof")
			env["MCPFN_BENCH_PROFILE_SKIP"] = fmt.Sprint(untimedCalls)
			env["MCPFN_BENCH_PROFILE_CALLS"] = fmt.Sprint(o.WarmCalls)
		}
		spec := localtest.FunctionSpec{Name: f.name, Package: f.pkg, Env: env, BuildTags: tags, Stripped: true}
		if f.mcpfn {
			// It reads its key and writes its rows as a tool function's
			// role may (the local stack enforces the template's IAM).
			spec.RoleTool = echoRole
		}
		specs = append(specs, spec)
	}
	fmt.Fprintf(o.Progress, "bench-lambda: building %d functions and starting DynamoDB Local…\n", len(specs))
	st, err := localtest.Start(ctx, localtest.Config{
		Dir: o.Dir, BinDir: o.BinDir,
		MCPAddr: "127.0.0.1:0", InvokeAddr: "127.0.0.1:0", DynamoDBAddr: "127.0.0.1:0",
		XRayAddr: "127.0.0.1:0", OTLPAddr: "127.0.0.1:0", IssuerAddr: "127.0.0.1:0",
		AgentCoreAddr: "127.0.0.1:0", ViewerAddr: "127.0.0.1:0",
		PoolSize:       1,
		Functions:      []localtest.FunctionSpec{}, // the bench functions only
		ExtraFunctions: specs,
		// The stack's steps, and a first run's installs into the cache.
		Stdout: o.Progress,
	})
	if err != nil {
		return err
	}
	defer st.Close()
	st.Secrets().Put(keySecret, secret)
	ring, err := calltoken.KeyringFromSecrets([]byte(secret))
	if err != nil {
		return err
	}
	env := envelopes{signers: map[string]*calltoken.Signer{}}
	for _, f := range sel {
		s := calltoken.NewSigner(calltoken.SignerGateway)
		s.Add(echoTool, f.name, ring, nil)
		env.signers[f.name] = s
	}
	sizes := make([]int64, len(sel))
	for i, f := range sel {
		if sizes[i], err = st.BootstrapSize(f.name); err != nil {
			return err
		}
	}

	var runs [][]result
	for k := range o.Runs {
		if o.Runs > 1 {
			fmt.Fprintf(o.Progress, "bench-lambda: run %d of %d\n", k+1, o.Runs)
		}
		loadStart := benchkit.LoadAvg()
		res, err := measure(ctx, o, st, &env, sel)
		if err != nil {
			return err
		}
		for i := range res {
			res[i].size = sizes[i]
		}
		if o.Runs > 1 {
			fmt.Fprintf(out, "## run %d of %d\n\n", k+1, o.Runs)
		}
		report(out, o, sel, res, loadStart, benchkit.LoadAvg())
		runs = append(runs, res)
	}
	if o.Runs > 1 {
		summary(out, sel, runs)
	}
	if o.CPUProfile != "" {
		fmt.Fprintf(out, "\nCPU profiles of the held environments' %d warm calls (the build with mcpfn_benchprofile: its figures above are not the measured build's): %s\n",
			o.WarmCalls, filepath.Join(o.CPUProfile, "*.pprof.<pid>"))
	}
	return nil
}

// measure is one whole measurement of the flavours sel: cold starts, then
// warm invokes of a freshly held environment per flavour.
func measure(ctx context.Context, o options, st *localtest.Stack, env *envelopes, sel []flavour) ([]result, error) {
	res := make([]result, len(sel))

	// Cold starts: a fresh emulator per sample; the flavours take turns,
	// starting each round with the next one.
	fmt.Fprintf(o.Progress, "bench-lambda: %d cold starts per flavour…\n", o.ColdSamples)
	for round := range o.ColdSamples {
		for k := range sel {
			i := (round + k) % len(sel)
			f := sel[i]
			payload, check, err := env.next(f)
			if err != nil {
				return nil, err
			}
			d, post, rss, err := coldStart(ctx, st, f, payload, check)
			if err != nil {
				return nil, err
			}
			res[i].cold = append(res[i].cold, d)
			res[i].coldPost = append(res[i].coldPost, post)
			res[i].rss = max(res[i].rss, rss)
		}
	}

	// Warm: one held emulator per flavour, each past its cold start and a
	// few untimed calls; then blocks of Block timed invokes, the flavours
	// taking turns. Envelopes are signed before each block, outside the
	// timing.
	fmt.Fprintf(o.Progress, "bench-lambda: %d warm invokes per flavour…\n", o.WarmCalls)
	held := make([]*localtest.Emulator, len(sel))
	defer func() {
		for _, h := range held {
			if h != nil {
				h.Close()
			}
		}
	}()
	lastCall := make([]string, len(sel))
	var err error
	for i, f := range sel {
		if held[i], err = st.Hold(ctx, f.name); err != nil {
			return nil, err
		}
		for range untimedCalls {
			payload, check, err := env.next(f)
			if err != nil {
				return nil, err
			}
			if err := invoke(ctx, held[i], payload, check); err != nil {
				return nil, err
			}
		}
	}
	for done := 0; done < o.WarmCalls; done += o.Block {
		n := min(o.Block, o.WarmCalls-done)
		for i, f := range sel {
			payloads := make([][]byte, n)
			checks := make([]func([]byte) error, n)
			for j := range n {
				if payloads[j], checks[j], err = env.next(f); err != nil {
					return nil, err
				}
			}
			lastCall[i] = env.lastCallID
			for j := range n {
				if o.Gap > 0 {
					time.Sleep(o.Gap)
				}
				inv, err := call(ctx, held[i], payloads[j])
				if err != nil {
					return nil, err
				}
				// Untimed: the environment is busy until the extensions
				// are done, and the next timed invoke must not wait.
				if err := inv.Wait(ctx); err != nil {
					return nil, err
				}
				x := &res[i]
				tl := inv.Timeline()
				x.warm = append(x.warm, inv.Duration())
				x.warmPost = append(x.warmPost, inv.PostRuntime())
				x.warmToPost = append(x.warmToPost, tl.Posted.Sub(inv.Sent))
				x.warmToNext = append(x.warmToNext, tl.RuntimeNext.Sub(inv.Sent))
				if !tl.ExtensionEvent.IsZero() {
					x.warmToExt = append(x.warmToExt, tl.ExtensionEvent.Sub(inv.Sent))
				}
				x.warmNextToPost = append(x.warmNextToPost, tl.Posted.Sub(tl.RuntimeNext))
				x.warmPostToAnswer = append(x.warmPostToAnswer, inv.Answered.Sub(tl.Posted))
				x.warmBusy += time.Since(inv.Sent)
				if err := checks[j](inv.Payload); err != nil {
					return nil, fmt.Errorf("%s: %w", f.name, err)
				}
			}
		}
	}
	for i := range sel {
		x := &res[i]
		x.warmRSS = held[i].PeakRSS()
		x.rss = max(x.rss, x.warmRSS)
		for _, ds := range [][]time.Duration{x.cold, x.coldPost, x.warm, x.warmPost, x.warmToPost, x.warmToNext, x.warmToExt, x.warmNextToPost, x.warmPostToAnswer} {
			slices.Sort(ds)
		}
	}
	// The audit-on flavours really audited: the last call's row is there.
	for i, f := range sel {
		if err := checkRow(ctx, st, f, lastCall[i]); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// coldStart times one fresh emulator's first invoke (process start →
// answer) and checks the answer; post is the time after the answer until
// the environment was free, rss the bootstrap's peak RSS then.
func coldStart(ctx context.Context, st *localtest.Stack, f flavour, payload []byte, check func([]byte) error) (d, post time.Duration, rss int64, err error) {
	ctx, cancel := context.WithTimeout(ctx, invokeWait)
	defer cancel()
	h, err := st.Hold(ctx, f.name)
	if err != nil {
		return 0, 0, 0, err
	}
	defer h.Close()
	inv, err := call(ctx, h, payload)
	if err != nil {
		return 0, 0, 0, err
	}
	d = inv.Answered.Sub(h.Started())
	if err := check(inv.Payload); err != nil {
		return 0, 0, 0, fmt.Errorf("%s (cold): %w (see %s)", f.name, err, st.LogPath(f.name))
	}
	if err := inv.Wait(ctx); err != nil {
		return 0, 0, 0, err
	}
	return d, inv.PostRuntime(), h.PeakRSS(), nil
}

// call invokes a held emulator; an answer other than 200 is an error.
func call(ctx context.Context, h *localtest.Emulator, payload []byte) (*localtest.Invocation, error) {
	ctx, cancel := context.WithTimeout(ctx, invokeWait)
	defer cancel()
	inv, err := h.Call(ctx, payload)
	if err != nil {
		return nil, err
	}
	if inv.Status != 200 {
		return nil, fmt.Errorf("invoke: HTTP %d: %.300s", inv.Status, inv.Payload)
	}
	return inv, nil
}

func invoke(ctx context.Context, h *localtest.Emulator, payload []byte, check func([]byte) error) error {
	inv, err := call(ctx, h, payload)
	if err != nil {
		return err
	}
	return check(inv.Payload)
}

// envelopes makes the payloads: a signed envelope per call, as the gateway
// sends, with a fresh call id.
type envelopes struct {
	signers    map[string]*calltoken.Signer
	seq        int
	lastCallID string
}

var benchCaller = &calltoken.Identity{Subject: "bench", AuthMethod: "jwt", ClientID: "bench-lambda"}

func (e *envelopes) next(f flavour) ([]byte, func([]byte) error, error) {
	e.seq++
	callID := fmt.Sprintf("bench-%d-%d", time.Now().UnixNano(), e.seq)
	text := fmt.Sprintf("echo %d", e.seq)
	args, _ := json.Marshal(map[string]string{"text": text})
	tok, err := e.signers[f.name].Sign(calltoken.Call{Tool: echoTool, CallID: callID, Caller: benchCaller, Args: args, Expires: time.Now().Add(5 * time.Minute)})
	if err != nil {
		return nil, nil, err
	}
	payload, err := json.Marshal(wire.Envelope{
		Version: wire.EnvelopeVersion, CallID: callID, CallToken: tok,
		Params: wire.EnvelopeParams{Name: echoTool, Arguments: args},
		MCP:    wire.EnvelopeMCP{Method: "tools/call", ProtocolVersion: "2025-06-18"},
	})
	if err != nil {
		return nil, nil, err
	}
	e.lastCallID = callID
	if !f.mcpfn {
		// The bare echo answers its payload.
		return payload, func(b []byte) error {
			if string(b) != string(payload) {
				return fmt.Errorf("bare echo answered %.200s", b)
			}
			return nil
		}, nil
	}
	return payload, func(b []byte) error {
		var r struct {
			Result struct {
				IsError    bool                  `json:"isError"`
				Structured struct{ Text string } `json:"structuredContent"`
			} `json:"result"`
		}
		if err := json.Unmarshal(b, &r); err != nil || r.Result.IsError || r.Result.Structured.Text != text {
			return fmt.Errorf("the echo answered %.300s", b)
		}
		return nil
	}, nil
}

// checkRow makes sure an audit-on flavour wrote the row of callID (and an
// audit-off one did not).
func checkRow(ctx context.Context, st *localtest.Stack, f flavour, callID string) error {
	if !f.mcpfn {
		return nil
	}
	got, err := st.DynamoDB().GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(st.AuditTable()), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{audit.KeyAttribute: &types.AttributeValueMemberS{Value: audit.RowKey(echoTool, callID)}},
	})
	if err != nil {
		return fmt.Errorf("reading the audit row of %s: %w", f.name, err)
	}
	if (got.Item != nil) != f.audit {
		return fmt.Errorf("%s: audit row of call %s present=%v, want %v", f.name, callID, got.Item != nil, f.audit)
	}
	return nil
}

// auditBound is issue 21's bound on warm p50 audit on / audit off, at the
// caller and to the runtime's response POST (issue 12's was 1.5×).
const auditBound = 1.25

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

// bounds are the bounds of one run of sel (bare and the default build
// first).
func bounds(sel []flavour, res []result) []benchkit.Bound {
	idx := map[string]int{}
	for i, f := range sel {
		idx[f.name] = i
	}
	r := func(name string) *result { return &res[idx[name]] }
	bare, off, on := r(bareFn), r(offFn), r(onFn)
	bs := []benchkit.Bound{
		{What: "cold start, audit off / bare", Got: ratio(off.coldMedian(), bare.coldMedian()), Limit: 1.2, Unit: "×"},
		{What: "cold start, audit on / bare", Got: ratio(on.coldMedian(), bare.coldMedian()), Limit: 1.5, Unit: "×"},
		{What: "warm p50, audit on / audit off", Got: ratio(pct(on.warm, 50), pct(off.warm, 50)), Limit: auditBound, Unit: "×"},
		{What: "warm p50 to the response POST, audit on / audit off", Got: ratio(pct(on.warmToPost, 50), pct(off.warmToPost, 50)), Limit: auditBound, Unit: "×"},
		{What: "warm p50, audit off / bare", Got: ratio(pct(off.warm, 50), pct(bare.warm, 50)), Limit: 1.1, Unit: "×"},
	}
	// The memory bound is the default build's (the tracing SDKs are opt-in
	// tags whose cost the reference table shows).
	for _, f := range sel[1:3] {
		bs = append(bs, benchkit.Bound{What: "peak RSS (max of all), " + f.label, Got: mib(r(f.name).rss), Limit: maxRSSMiB, Unit: " MiB"})
	}
	return bs
}

func report(out io.Writer, o options, sel []flavour, res []result, loadStart, loadEnd string) {
	fmt.Fprintf(out, "%s\n\n", benchkit.MachineLine(loadStart, loadEnd))
	fmt.Fprintf(out, "cold start: median of %d fresh emulators per flavour (process start → answer), interleaved; warm: %d invokes per flavour at 1 client, in interleaved blocks of %d; "+
		"times are the caller's, as on Lambda (the answer at the runtime's response); post-runtime: from the response to the environment being free "+
		"(extensions done; Lambda's PostRuntimeExtensionsDuration), median, cold / warm; invokes/s: one environment, each invoke until it is free; "+
		"every payload a signed envelope; peak RSS: VmHWM of the bootstrap, the largest of the %d processes of the flavour (and of the warm one after all its invokes)\n\n",
		o.ColdSamples, o.WarmCalls, o.Block, o.ColdSamples+1)
	fmt.Fprintln(out, "| flavour | cold start median (min–max) | warm p50 | warm p99 | warm p50 to the response POST | post-runtime cold / warm | invokes/s | peak RSS, max of all (warm one) | bootstrap |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|---|---|---|")
	for i, f := range sel {
		x := &res[i]
		fmt.Fprintf(out, "| %s | %s (%s–%s) | %s | %s | %s | %s / %s | %.0f | %.1f MiB (%.1f) | %.1f MB |\n", f.label,
			ms(x.coldMedian()), ms(x.cold[0]), ms(x.cold[len(x.cold)-1]),
			ms(pct(x.warm, 50)), ms(pct(x.warm, 99)), ms(pct(x.warmToPost, 50)), ms(median(x.coldPost)), ms(median(x.warmPost)),
			float64(len(x.warm))/x.warmBusy.Seconds(), mib(x.rss), mib(x.warmRSS), float64(x.size)/1e6)
	}
	fmt.Fprint(out, "\nwhere a warm invoke's time goes (p50 of each step, the Runtime API proxy's timestamps; the steps' p50s need not add up):\n\n")
	fmt.Fprintln(out, "| flavour | sent → the runtime has the invoke | sent → the extension has its INVOKE | the runtime's next → its response POST | POST → the caller's answer |")
	fmt.Fprintln(out, "|---|---|---|---|---|")
	for i, f := range sel {
		x := &res[i]
		ext := "–"
		if len(x.warmToExt) > 0 {
			ext = ms(pct(x.warmToExt, 50))
		}
		fmt.Fprintf(out, "| %s | %s | %s | %s | %s |\n", f.label, ms(pct(x.warmToNext, 50)), ext, ms(pct(x.warmNextToPost, 50)), ms(pct(x.warmPostToAnswer, 50)))
	}
	fmt.Fprintf(out, "\nbounds (issue 12's \"Must hold\"; audit on / off: issue 21's %g×), on the default build:\n\n", auditBound)
	benchkit.WriteBounds(out, bounds(sel, res))
	bare := &res[0]
	fmt.Fprint(out, "\nfor reference (no bound), every flavour against bare and its own audit-off build:\n\n")
	fmt.Fprintln(out, "| flavour | cold start / bare | warm p50 / bare | warm p50 / audit off | peak RSS / bare |")
	fmt.Fprintln(out, "|---|---|---|---|---|")
	for i, f := range sel[1:] {
		x := &res[i+1]
		vsOff := "–"
		if f.audit {
			// echo lists each build's audit-off flavour just before its audit-on one.
			vsOff = fmt.Sprintf("%.2f×", ratio(pct(x.warm, 50), pct(res[i].warm, 50)))
		}
		fmt.Fprintf(out, "| %s | %.2f× | %.2f× | %s | %.2f× |\n", f.label, ratio(x.coldMedian(), bare.coldMedian()),
			ratio(pct(x.warm, 50), pct(bare.warm, 50)), vsOff, float64(x.rss)/float64(bare.rss))
	}
	fmt.Fprintf(out, "\nbootstrap: built with `make build`'s flags (-trimpath -tags lambda.norpc -ldflags='-s -w -buildid='), CGO_ENABLED=0, for %s/%s\n\n", runtime.GOOS, runtime.GOARCH)
}

// summary judges each bound on its median over the runs, with every run's
// figure and the spread ((max − min) / median), and gives the default
// build's warm p50s the same way.
func summary(out io.Writer, sel []flavour, runs [][]result) {
	n := len(runs)
	fmt.Fprintf(out, "## median of %d runs\n\neach bound judged on its median over the runs; spread = (max − min) / median:\n\n", n)
	head := "| ratio |"
	rule := "|---|"
	for k := range n {
		head += fmt.Sprintf(" run %d |", k+1)
		rule += "---|"
	}
	fmt.Fprintln(out, head+" median | min–max | spread | bound | |")
	fmt.Fprintln(out, rule+"---|---|---|---|---|")
	per := make([][]benchkit.Bound, n)
	for k, res := range runs {
		per[k] = bounds(sel, res)
	}
	for j, b := range per[0] {
		got := make([]float64, n)
		line := "| " + b.What + " |"
		for k := range n {
			got[k] = per[k][j].Got
			line += fmt.Sprintf(" %.2f%s |", got[k], b.Unit)
		}
		med, lo, hi := spread(got)
		b.Got = med
		fmt.Fprintf(out, "%s %.2f%s | %.2f–%.2f | %.0f %% | ≤ %g%s | %s |\n", line, med, b.Unit, lo, hi, (hi-lo)/med*100, b.Limit, b.Unit, b.Verdict())
	}
	fmt.Fprint(out, "\nwarm p50s (ms), median over the runs (min–max):\n\n")
	fmt.Fprintln(out, "| flavour | at the caller | to the response POST | the runtime's next → its POST |")
	fmt.Fprintln(out, "|---|---|---|---|")
	for i, f := range sel {
		cols := []func(*result) []time.Duration{
			func(x *result) []time.Duration { return x.warm },
			func(x *result) []time.Duration { return x.warmToPost },
			func(x *result) []time.Duration { return x.warmNextToPost },
		}
		line := "| " + f.label + " |"
		for _, col := range cols {
			v := make([]float64, n)
			for k := range n {
				v[k] = float64(pct(col(&runs[k][i]), 50).Microseconds()) / 1000
			}
			med, lo, hi := spread(v)
			line += fmt.Sprintf(" %.2f (%.2f–%.2f) |", med, lo, hi)
		}
		fmt.Fprintln(out, line)
	}
}

// spread returns the median, minimum and maximum of v.
func spread(v []float64) (med, lo, hi float64) {
	s := slices.Clone(v)
	slices.Sort(s)
	k := len(s)
	return (s[(k-1)/2] + s[k/2]) / 2, s[0], s[k-1]
}

func ms(d time.Duration) string { return benchkit.MS(d) }

func mib(b int64) float64 { return benchkit.MiB(b) }

// echoRole stands for the echo tool (mcpfn_echo) where only its name
// matters: the role the local stack gives its functions.
var echoRole = adapter.MustDefine(adapter.ToolDef[echoArgs, echoArgs]{
	Name: echoTool, Description: "Echoes its text.",
	Handler: func(context.Context, *adapter.Call, echoArgs) (echoArgs, error) { return echoArgs{}, nil },
})

type echoArgs struct {
	Text string `json:"text"`
}
