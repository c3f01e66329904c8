package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/localtest"
)

// run starts the stack, runs the load, reconciles, and writes the outputs.
func run(ctx context.Context, o options) (*report, error) {
	o.defaults()
	out, err := filepath.Abs(o.Out)
	if err != nil {
		return nil, err
	}
	stackDir := filepath.Join(out, "stack")
	// The stack's files are this run's record: xray.jsonl, otlp.jsonl, logs.
	if err := os.RemoveAll(stackDir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(stackDir, 0o755); err != nil {
		return nil, err
	}
	fmt.Fprintf(o.Progress, "soak: starting the local stack in %s…\n", stackDir)
	st, err := localtest.Start(ctx, localtest.Config{
		Dir: stackDir, BinDir: o.BinDir,
		MCPAddr: "127.0.0.1:0", InvokeAddr: "127.0.0.1:0", DynamoDBAddr: "127.0.0.1:0",
		XRayAddr: "127.0.0.1:0", OTLPAddr: "127.0.0.1:0", IssuerAddr: "127.0.0.1:0",
		AgentCoreAddr: "127.0.0.1:0", ViewerAddr: "127.0.0.1:0",
		Stdout: o.Progress,
	})
	if err != nil {
		return nil, err
	}
	defer st.Close()

	rep := &report{o: o, out: out, stackDir: stackDir, ready: st.ReadyTime()}
	rec := newRecorder(time.Now(), o.Bucket)
	rec.last = int((o.Duration+o.Bucket-1)/o.Bucket) - 1
	clients, err := connectClients(ctx, st, o, rec)
	if err != nil {
		return nil, err
	}
	// Connecting took a moment: the load's clock starts now.
	rep.started = time.Now()
	rec.start = rep.started

	stop := make(chan struct{})
	samples := sampleMemory(st, rep.started, o.Sample, stop)
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() { c.run(stop) })
	}
	fmt.Fprintf(o.Progress, "soak: %d clients for %v (warm-up %v), a point every %v\n", o.Clients, o.Duration, o.Warmup, o.Bucket)
	progressLines(ctx, rec, o)
	close(stop)
	wg.Wait()
	rep.loadEnd = time.Since(rep.started)
	mem := <-samples
	if o.HeapProfile != "" {
		if err := writeHeapProfile(o.HeapProfile); err != nil {
			return nil, err
		}
	}
	for _, c := range clients {
		_ = c.session.Close()
		_ = c.reader.Close()
		_ = c.tasks.conn.Close()
	}

	// Every invoke answered and every row written, then the table.
	fmt.Fprintln(o.Progress, "soak: settling the stack and reading the audit table…")
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := st.Settle(sctx); err != nil {
		return nil, fmt.Errorf("settling the stack: %w", err)
	}
	scanStart := time.Now()
	rec.mu.Lock()
	expect := len(rec.calls) + len(rec.tasks)
	rec.mu.Unlock()
	rows, segments, err := scanAudit(sctx, st.DynamoDB(), st.AuditTable(), expect)
	if err != nil {
		rep.scanErr = err
	}
	rec.mu.Lock()
	rep.rec = reconcile(rec.calls, rec.tasks, rows)
	rec.mu.Unlock()
	rep.rec.ScanTime, rep.rec.Segments = time.Since(scanStart), segments
	for _, m := range st.Memory() {
		if m.Component == localtest.DynamoDBLocalComponent {
			rep.heap, rep.heapErr = jvmHeap(sctx, m.PID)
			rep.heapLimit = jvmHeapLimit(m.PID)
			rep.jvmRSS = m.RSS
		}
	}
	for _, f := range []string{st.XRayPath(), st.OTLPPath()} {
		if fi, err := os.Stat(f); err == nil {
			rep.files = append(rep.files, fileSize{filepath.Base(f), fi.Size()})
		}
	}
	rep.analyse(rec, mem)
	if err := rep.write(); err != nil {
		return nil, err
	}
	return rep, nil
}

// connectClients opens each client's sessions: one with the stack's token,
// one with a token of no scope (for the refused delete), and a connection
// for the Tasks extension's messages.
func connectClients(ctx context.Context, st *localtest.Stack, o options, rec *recorder) ([]*client, error) {
	transport := &http.Transport{MaxIdleConnsPerHost: 4 * o.Clients, IdleConnTimeout: time.Minute}
	reader, err := st.MintToken(map[string]any{"sub": "soak-reader", "client_id": "mcpfn-soak"})
	if err != nil {
		return nil, err
	}
	session := func(token string) (*mcp.ClientSession, error) {
		cl := mcp.NewClient(&mcp.Implementation{Name: "mcpfn-soak", Version: "1"}, &mcp.ClientOptions{
			ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { rec.gotProgress() },
		})
		return cl.Connect(ctx, &mcp.StreamableClientTransport{
			Endpoint: st.MCPURL(), HTTPClient: &http.Client{Transport: bearer{token, transport}},
		}, nil)
	}
	run := fmt.Sprintf("%x", time.Now().Unix())
	var clients []*client
	for i := range o.Clients {
		c := &client{n: i, rng: rand.New(rand.NewPCG(o.Seed, uint64(i))), rec: rec, channel: fmt.Sprintf("soak-%s-%d", run, i)}
		if c.session, err = session(st.Token()); err != nil {
			return nil, err
		}
		if c.reader, err = session(reader); err != nil {
			return nil, err
		}
		tr := &mcp.StreamableClientTransport{Endpoint: st.MCPURL(), HTTPClient: &http.Client{Transport: taskName{bearer{st.Token(), transport}}}}
		conn, err := tr.Connect(ctx)
		if err != nil {
			return nil, err
		}
		c.tasks = &taskConn{conn: conn}
		clients = append(clients, c)
	}
	return clients, nil
}

// progressLines prints a line per bucket until the load's time is up or
// ctx ends (Ctrl-C: the soak stops early and reports what it has).
func progressLines(ctx context.Context, rec *recorder, o options) {
	end := time.NewTimer(o.Duration)
	defer end.Stop()
	tick := time.NewTicker(o.Bucket)
	defer tick.Stop()
	for {
		select {
		case <-end.C:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
			rec.mu.Lock()
			var b *bucketLoad
			if i := int(time.Since(rec.start)/o.Bucket) - 1; i >= 0 && i < len(rec.buckets) {
				b = rec.buckets[i]
			}
			calls, problems := len(rec.calls), rec.nProblem
			var st latencyStats
			if b != nil {
				st = statsOf(b.latencies)
			}
			rec.mu.Unlock()
			fmt.Fprintf(o.Progress, "soak: %v: %d requests in the last %v (%.0f/s), p50 %.1f ms, p99 %.1f ms; %d calls so far, %d unexpected\n",
				time.Since(rec.start).Round(time.Second), st.N, o.Bucket, float64(st.N)/o.Bucket.Seconds(), st.P50, st.P99, calls, problems)
		}
	}
}

// writeHeapProfile writes this process's heap profile after a collection,
// so that in-use figures are what is live.
func writeHeapProfile(path string) error {
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
