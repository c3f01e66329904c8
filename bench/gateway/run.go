package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/gateway"
	"github.com/mcpfn/mcpfn/internal/benchkit"
	"github.com/mcpfn/mcpfn/localtest"
)

// The flavours, in the order of the report.
const (
	direct = iota
	bare
	mcpfnGW
	nFlavours
)

var labels = [nFlavours]string{
	"direct lambda:Invoke (no gateway)",
	"bare go-sdk forwarder (no auth, no audit)",
	"mcpfn gateway (JWT, signed calls, audit on)",
}

// level is one flavour's calls at one concurrency level.
type level struct {
	lat  []time.Duration // every timed call's, sorted once done
	wall time.Duration   // the blocks' wall time
}

func (l *level) perSecond() float64 {
	if l.wall <= 0 {
		return 0
	}
	return float64(len(l.lat)) / l.wall.Seconds()
}

// result is one flavour's figures (cold start, RSS and size only for the
// two gateways).
type result struct {
	levels map[int]*level // by clients
	cold   []time.Duration
	listen []time.Duration
	// coldCPU and listenCPU are the CPU the cold process had used by then
	// (its threads' run time): what the cold start costs whatever the
	// machine's load.
	coldCPU, listenCPU []time.Duration
	coldRSS            int64 // the largest VmHWM of the cold processes, after their first answer
	rss                int64 // VmHWM of the held process after all its load
	size               int64
	// cpuPerCall is the held process's CPU time (user + system) over the
	// warm phase divided by the calls it served then, warm-ups included.
	cpuPerCall time.Duration
}

func run(ctx context.Context, o options, out io.Writer) error {
	o.defaults()
	loadStart := benchkit.LoadAvg()
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return err
	}
	fmt.Fprintln(o.Progress, "bench-gateway: building both gateways…")
	bins, err := build(ctx, o)
	if err != nil {
		return err
	}
	fmt.Fprintln(o.Progress, "bench-gateway: starting the local stack (DynamoDB Local, the echo function under the RIE)…")
	st, err := startStack(ctx, o)
	if err != nil {
		return err
	}
	defer st.Close()

	var res [nFlavours]result
	for i := range res {
		res[i].levels = map[int]*level{}
	}
	for i, bin := range map[int]string{mcpfnGW: bins.gw[mcpfnGW], bare: bins.gw[bare]} {
		fi, err := os.Stat(bin)
		if err != nil {
			return err
		}
		res[i].size = fi.Size()
	}
	token, err := st.MintToken(map[string]any{"sub": "bench-user", "client_id": "bench-gateway", "scope": echoScope})
	if err != nil {
		return err
	}
	env, err := mcpfnEnv(st, o.Dir)
	if err != nil {
		return err
	}
	servers := [nFlavours]server{
		mcpfnGW: {name: "mcpfn", bin: bins.gw[mcpfnGW], env: env, listenVar: gateway.EnvListenAddr, logPath: st.LogPath("mcpfn-gateway")},
		bare:    {name: "bare", bin: bins.gw[bare], env: bareEnv(st), listenVar: "LISTEN_ADDR", logPath: st.LogPath("bare-forwarder")},
	}
	tokens := [nFlavours]string{mcpfnGW: token}
	var seq atomic.Int64

	// The function answers, and every emulator of its pool is past its own
	// cold start, before anything is timed.
	lc := lambdaClient(st)
	directs := make([]caller, o.maxClients())
	for i := range directs {
		directs[i] = directCaller{client: lc}
	}
	if _, _, err := block(ctx, directs, 10*o.maxClients(), &seq); err != nil {
		return fmt.Errorf("invoking %s directly: %w (see %s)", echoFn, err, st.LogPath(echoFn))
	}

	// Cold starts: a fresh process per sample, the gateways taking turns.
	fmt.Fprintf(o.Progress, "bench-gateway: %d cold starts per gateway…\n", o.ColdSamples)
	gws := []int{bare, mcpfnGW}
	for round := range o.ColdSamples {
		for k := range gws {
			i := gws[(round+k)%len(gws)]
			c, err := coldStart(ctx, servers[i], tokens[i], &seq, "", "")
			if err != nil {
				return err
			}
			res[i].cold = append(res[i].cold, c.answered)
			res[i].listen = append(res[i].listen, c.listening)
			res[i].coldCPU = append(res[i].coldCPU, c.answeredCPU)
			res[i].listenCPU = append(res[i].listenCPU, c.listeningCPU)
			res[i].coldRSS = max(res[i].coldRSS, c.rss)
		}
	}

	// Warm: one held process per gateway, as many clients as the highest
	// level, each level's flavours taking turns in blocks.
	held := map[int]*process{}
	defer func() {
		for _, p := range held {
			p.stop()
		}
	}()
	callers := [nFlavours][]caller{direct: directs}
	for _, i := range gws {
		if held[i], err = servers[i].start(ctx); err != nil {
			return err
		}
		for range o.maxClients() {
			c, err := connect(ctx, held[i].url, tokens[i])
			if err != nil {
				return fmt.Errorf("%s: %w (see %s)", servers[i].name, err, servers[i].logPath)
			}
			defer c.close()
			callers[i] = append(callers[i], c)
		}
	}
	if err := checkAuthOn(ctx, held[mcpfnGW].url); err != nil {
		return err
	}
	var served [nFlavours]int
	var cpu0 [nFlavours]time.Duration
	for _, i := range gws {
		cpu0[i] = benchkit.ProcessCPU(held[i].cmd.Process.Pid)
	}
	for _, n := range o.Clients {
		fmt.Fprintf(o.Progress, "bench-gateway: %d timed calls per flavour at %d client(s)…\n", o.Calls, n)
		for i := range nFlavours {
			// Untimed: connections opened, code paths warm.
			warm := max(20*n, 100)
			if _, _, err := block(ctx, callers[i][:n], warm, &seq); err != nil {
				return fmt.Errorf("%s: %w", labels[i], err)
			}
			served[i] += warm
			res[i].levels[n] = &level{}
		}
		for round, done := 0, 0; done < o.Calls; round, done = round+1, done+o.Block {
			calls := min(o.Block, o.Calls-done)
			for k := range nFlavours {
				i := (round + k) % nFlavours
				lat, wall, err := block(ctx, callers[i][:n], calls, &seq)
				if err != nil {
					return fmt.Errorf("%s at %d client(s): %w", labels[i], n, err)
				}
				l := res[i].levels[n]
				l.lat = append(l.lat, lat...)
				l.wall += wall
				served[i] += calls
			}
		}
		for i := range nFlavours {
			slices.Sort(res[i].levels[n].lat)
		}
	}
	for _, i := range gws {
		res[i].rss = held[i].peakRSS()
		res[i].cpuPerCall = (benchkit.ProcessCPU(held[i].cmd.Process.Pid) - cpu0[i]) / time.Duration(served[i])
	}
	for i := range res {
		for _, ds := range [][]time.Duration{res[i].cold, res[i].listen, res[i].coldCPU, res[i].listenCPU} {
			slices.Sort(ds)
		}
	}
	if err := checkAuditOn(ctx, st, held[mcpfnGW].url); err != nil {
		return err
	}
	report(out, o, &res, loadStart, benchkit.LoadAvg())

	if o.CPUProfile != "" {
		// Both gateways, in their profiling builds, one after the other.
		for _, i := range gws {
			s := servers[i]
			s.name += " (pprof build)"
			s.bin = bins.pprof[i]
			if err := profile(ctx, o, s, tokens[i], profilePath(o.CPUProfile, i)); err != nil {
				return err
			}
		}
	}
	if len(o.coldKinds()) > 0 {
		var ss [nFlavours]server
		for _, i := range gws {
			ss[i] = servers[i]
			ss[i].name += " (pprof build)"
			ss[i].bin = bins.pprof[i]
		}
		if err := coldProfiles(ctx, o, ss, tokens, &seq); err != nil {
			return err
		}
	}
	return nil
}

// cold is one cold start: the times from starting the process to its port
// accepting connections and to the first tools/call answered, the CPU its
// threads had used at each, and its VmHWM then.
type cold struct {
	listening, answered       time.Duration
	listeningCPU, answeredCPU time.Duration
	rss                       int64
}

// coldStart times one fresh process of s: from starting it to a fresh
// client's first tools/call answered (the client connects as any does:
// initialize, then the call), and to its port accepting connections. With
// profEnv, a coldprof variable (a profiling build only), the process writes
// that profile of its cold start to profPath (coldProfiles).
func coldStart(ctx context.Context, s server, token string, seq *atomic.Int64, profEnv, profPath string) (cold, error) {
	p, err := s.start(ctx, coldProfileEnv(profEnv, profPath)...)
	if err != nil {
		return cold{}, err
	}
	defer p.stop()
	c := cold{listening: time.Since(p.began), listeningCPU: benchkit.ThreadsCPU(p.cmd.Process.Pid)}
	cl, err := connect(ctx, p.url, token)
	if err != nil {
		return cold{}, fmt.Errorf("%s (cold): %w (see %s)", s.name, err, s.logPath)
	}
	defer cl.close()
	if err := cl.call(ctx, seq.Add(1)); err != nil {
		return cold{}, fmt.Errorf("%s (cold): %w (see %s)", s.name, err, s.logPath)
	}
	c.answered = time.Since(p.began)
	c.answeredCPU = benchkit.ThreadsCPU(p.cmd.Process.Pid)
	c.rss = p.peakRSS()
	if profEnv != "" {
		if err := collectColdProfile(ctx, p, profPath); err != nil {
			return cold{}, fmt.Errorf("%s (cold): %w (see %s)", s.name, err, s.logPath)
		}
	}
	return c, nil
}

// checkAuthOn makes sure mcpfn's gateway is measured with its auth on: a
// client without a token is refused.
func checkAuthOn(ctx context.Context, url string) error {
	c, err := connect(ctx, url, "")
	if err == nil {
		c.close()
		return errors.New("the mcpfn gateway accepted a client without a token: it is not in JWT mode")
	}
	return nil
}

// checkAuditOn makes sure mcpfn's gateway audits: a call without the tool's
// scope is refused before any Invoke, and the gateway writes its row in
// DynamoDB Local (the calls it forwards are the function's to audit).
func checkAuditOn(ctx context.Context, st *localtest.Stack, url string) error {
	tok, err := st.MintToken(map[string]any{"sub": "bench-unscoped", "client_id": "bench-gateway"})
	if err != nil {
		return err
	}
	c, err := connect(ctx, url, tok)
	if err != nil {
		return err
	}
	defer c.close()
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: echoTool, Arguments: map[string]any{"text": "unscoped"}})
	if err != nil {
		return err
	}
	var body struct {
		Error   string            `json:"error"`
		Details map[string]string `json:"details"`
	}
	if len(res.Content) == 1 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			_ = json.Unmarshal([]byte(tc.Text), &body)
		}
	}
	callID := body.Details["callId"]
	if !res.IsError || body.Error != "FORBIDDEN" || callID == "" {
		return fmt.Errorf("a call without the echo's scope answered %s, want FORBIDDEN with its call id", resultText(res))
	}
	key := map[string]types.AttributeValue{audit.KeyAttribute: &types.AttributeValueMemberS{Value: audit.RowKey(audit.GatewayWriter, callID)}}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := st.DynamoDB().GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(st.AuditTable()), Key: key, ConsistentRead: aws.Bool(true)})
		if err != nil {
			return fmt.Errorf("reading the audit row of the refused call: %w", err)
		}
		if got.Item != nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the mcpfn gateway wrote no audit row for refused call %s: audit is not on", callID)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
