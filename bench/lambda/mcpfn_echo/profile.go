//go:build mcpfn_benchprofile

package main

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"sync"

	"github.com/mcpfn/mcpfn/adapter"
)

// Environment of a profiling build (bench-lambda -cpuprofile).
const (
	// envProfile is the file the CPU profile is written to; a process
	// that never reaches its first profiled call writes none.
	envProfile = "MCPFN_BENCH_CPUPROFILE"
	// envSkip and envCalls: the profile covers calls skip+1 to
	// skip+calls, the held environment's timed ones.
	envSkip  = "MCPFN_BENCH_PROFILE_SKIP"
	envCalls = "MCPFN_BENCH_PROFILE_CALLS"
)

// profiling returns a hook set that profiles the process (every goroutine:
// the runtime's loop, the audit extension, the rows' writers) from the end
// of call skip to the end of call skip+calls. The process is killed, never
// stopped, so the profile is written when its last call ends.
func profiling() []adapter.Option {
	path := os.Getenv(envProfile)
	skip, _ := strconv.Atoi(os.Getenv(envSkip))
	calls, _ := strconv.Atoi(os.Getenv(envCalls))
	if path == "" || calls <= 0 {
		return nil
	}
	var (
		mu   sync.Mutex
		seen int
		file *os.File
	)
	return []adapter.Option{adapter.WithHooks(adapter.Hooks{
		AfterToolCall: func(context.Context, *adapter.Call, *adapter.Outcome) {
			mu.Lock()
			defer mu.Unlock()
			seen++
			switch seen {
			case skip:
				f, err := os.Create(fmt.Sprintf("%s.%d", path, os.Getpid()))
				if err == nil && pprof.StartCPUProfile(f) == nil {
					file = f
				}
			case skip + calls:
				if file != nil {
					pprof.StopCPUProfile()
					_ = file.Close()
				}
			}
		},
	})}
}
