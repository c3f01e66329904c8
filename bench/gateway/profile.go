package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"time"
)

// profile runs s (mcpfn's gateway built with -tags mcpfn_pprof) under the
// highest client count for o.ProfileTime and writes the process's CPU
// profile to o.CPUProfile, from net/http/pprof on a listener of its own.
// Its figures are not the report's: the profiling build and the sampling
// cost a little.
func profile(ctx context.Context, o options, s server, token string) error {
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

	fmt.Fprintf(o.Progress, "bench-gateway: CPU profile of the mcpfn gateway at %s for %v…\n", clientsLabel(len(callers)), o.ProfileTime)
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
	perr := fetchProfile(ctx, pprofAddr, o.ProfileTime, o.CPUProfile)
	took := time.Since(start)
	stop()
	if err := <-loadDone; err != nil {
		return err
	}
	if perr != nil {
		return perr
	}
	fmt.Fprintf(o.Progress, "bench-gateway: %d calls during the profile (%.0f/s); profile in %s — read it with: go tool pprof -top %s\n",
		calls.Load(), float64(calls.Load())/took.Seconds(), o.CPUProfile, o.CPUProfile)
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
