package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mcpfn/mcpfn/internal/benchkit"
	"github.com/mcpfn/mcpfn/internal/coldprof"
)

// coldKind is one kind of cold-start profile: the variable that asks a
// profiling build for it (internal/coldprof) and where the merge goes.
type coldKind struct {
	name, env, path string
}

// coldKinds are the kinds o asks for.
func (o options) coldKinds() []coldKind {
	var ks []coldKind
	if o.ColdProfile != "" {
		ks = append(ks, coldKind{"CPU", coldprof.EnvCPU, o.ColdProfile})
	}
	if o.ColdAllocs != "" {
		ks = append(ks, coldKind{"allocations", coldprof.EnvAllocs, o.ColdAllocs})
	}
	return ks
}

// coldProfiles starts o.ColdProfiles fresh processes of each gateway's
// profiling build (ss) per kind of profile o asks for, the two gateways
// taking turns as in the timed cold starts, each profiling its own cold
// start from its main package's init to its first answer
// (internal/coldprof), and merges each gateway's profiles into one, at
// profilePath(kind's path, i). One cold start is a few samples; the merge
// is what a reading needs. The profiling build and the profiling cost a
// little: the cold CPU printed beside is not the report's.
func coldProfiles(ctx context.Context, o options, ss [nFlavours]server, tokens [nFlavours]string, seq *atomic.Int64) error {
	for _, k := range o.coldKinds() {
		if err := coldProfilesOf(ctx, o, k, ss, tokens, seq); err != nil {
			return err
		}
	}
	return nil
}

func coldProfilesOf(ctx context.Context, o options, k coldKind, ss [nFlavours]server, tokens [nFlavours]string, seq *atomic.Int64) error {
	dir := filepath.Join(o.Dir, "coldprofiles")
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	fmt.Fprintf(o.Progress, "bench-gateway: %d cold starts per gateway, each profiled (%s)…\n", o.ColdProfiles, k.name)
	gws := []int{bare, mcpfnGW}
	short := map[int]string{bare: "bare", mcpfnGW: "mcpfn"}
	var (
		files [nFlavours][]string
		cpu   [nFlavours][]time.Duration
	)
	for round := range o.ColdProfiles {
		for j := range gws {
			i := gws[(round+j)%len(gws)]
			path := filepath.Join(dir, fmt.Sprintf("%s-%04d.pprof", short[i], round))
			c, err := coldStart(ctx, ss[i], tokens[i], seq, k.env, path)
			if err != nil {
				return err
			}
			files[i] = append(files[i], path)
			cpu[i] = append(cpu[i], c.answeredCPU)
		}
	}
	for _, i := range gws {
		out := profilePath(k.path, i)
		cmd := exec.CommandContext(ctx, "go", append([]string{"tool", "pprof", "-proto", "-output", out, ss[i].bin}, files[i]...)...)
		var buf bytes.Buffer
		cmd.Stdout, cmd.Stderr = &buf, &buf
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("merging the cold profiles of %s: %w\n%s", ss[i].name, err, buf.String())
		}
		slices.Sort(cpu[i])
		fmt.Fprintf(o.Progress, "bench-gateway: %s: %s profiles of %d cold starts (cold CPU median %s) merged in %s — read it with: go tool pprof -top %s %s\n",
			ss[i].name, k.name, len(files[i]), benchkit.MS(benchkit.Median(cpu[i])), out, ss[i].bin, out)
	}
	return nil
}

// collectColdProfile asks p, a profiling build started with a coldprof
// variable naming path, to end its cold start's profile, and waits until
// the profile is written.
func collectColdProfile(ctx context.Context, p *process, path string) error {
	if err := p.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
		select {
		case <-p.exited:
			return fmt.Errorf("the process exited before it wrote %s", path)
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no cold profile at %s after 10 s (is it a -tags mcpfn_pprof build?)", path)
		}
		time.Sleep(time.Millisecond)
	}
}

// coldProfileEnv is the environment that has a profiling build write the
// profile env asks for into path (env "": none).
func coldProfileEnv(env, path string) []string {
	if env == "" {
		return nil
	}
	return []string{env + "=" + path}
}
