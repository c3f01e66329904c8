package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mcpfn/mcpfn/internal/benchkit"
)

// profilePath is where flavour i's profile goes: path itself for mcpfn's
// gateway, path with "-bare" before its extension for the forwarder.
func profilePath(path string, i int) string {
	if i == mcpfnGW {
		return path
	}
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + "-bare" + ext
}

// profile runs s (a gateway built with -tags mcpfn_pprof) under the highest
// client count for o.ProfileTime and writes the process's CPU profile to
// path, from net/http/pprof on a listener of its own. Its figures are not
// the report's: the profiling build and the sampling cost a little.
func profile(ctx context.Context, o options, s server, token, path string) error {
	pprofAddr, err := freeAddr()
	if err != nil {
		return err
	}
	p, err := s.start(ctx, "MCPFN_PPROF_ADDR="+pprofAddr)
	if err != nil {
		return err
	}
	defer p.stop()
	var callers []caller
	for range o.maxClients() {
		c, err := connect(ctx, p.url, token)
		if err != nil {
			return err
		}
		defer c.close()
		callers = append(callers, c)
	}
	var seq atomic.Int64
	if _, _, err := block(ctx, callers, max(20*len(callers), 100), &seq); err != nil {
		return err
	}

	fmt.Fprintf(o.Progress, "bench-gateway: CPU profile of %s at %s for %v…\n", s.name, clientsLabel(len(callers)), o.ProfileTime)
	cpu0 := benchkit.ProcessCPU(p.cmd.Process.Pid)
	loadCtx, stop := context.WithCancel(ctx)
	var calls atomic.Int64
	loadDone := make(chan error, 1)
	go func() {
		for loadCtx.Err() == nil {
			lat, _, err := block(loadCtx, callers, 50*len(callers), &seq)
			calls.Add(int64(len(lat)))
			if err != nil && loadCtx.Err() == nil {
				loadDone <- err
				return
			}
		}
		loadDone <- nil
	}()
	start := time.Now()
	perr := fetchProfile(ctx, pprofAddr, o.ProfileTime, path)
	took := time.Since(start)
	stop()
	cpu := benchkit.ProcessCPU(p.cmd.Process.Pid) - cpu0
	if err := <-loadDone; err != nil {
		return err
	}
	if perr != nil {
		return perr
	}
	n := max(calls.Load(), 1)
	fmt.Fprintf(o.Progress, "bench-gateway: %s: %d calls during the profile (%.0f/s, %.0f µs CPU per call); profile in %s — read it with: go tool pprof -top %s %s\n",
		s.name, n, float64(n)/took.Seconds(), float64(cpu.Microseconds())/float64(n), path, s.bin, path)
	return nil
}

func fetchProfile(ctx context.Context, addr string, d time.Duration, path string) error {
	secs := max(1, int(d.Round(time.Second)/time.Second))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/debug/pprof/profile?seconds="+strconv.Itoa(secs), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("fetching the CPU profile: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("fetching the CPU profile: HTTP %d: %s", resp.StatusCode, b)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
