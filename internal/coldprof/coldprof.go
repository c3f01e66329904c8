// Package coldprof profiles a process's cold start, for the benchmarks'
// profiling builds only (-tags mcpfn_pprof: cmd/mcpfn-gateway's and
// bench/gateway/forwarder's pprof.go). A deployed gateway never links it.
//
// [EnvCPU] names the file a CPU profile of the cold start is written to,
// [EnvAllocs] the file of a profile of the allocations it made (every
// allocation recorded: run it apart from a CPU profile, whose figures it
// would inflate). Either runs from the main package's init (the
// dependencies' inits are GODEBUG=inittrace=1's) until the process gets
// SIGUSR1, sent once its first answer is in; each is written through a
// temporary file renamed into place, so that a file at the path is a whole
// profile.
//
// A cold start is a few tens of milliseconds: one process yields a few CPU
// samples, so `make bench-gateway` (-coldprofile) merges the profiles of
// many fresh processes. [Hz] asks for a sample per millisecond of CPU, but
// the kernel checks a thread's CPU timer on its scheduler tick, so fewer
// arrive: read a merged profile's shares, not its times.
package coldprof

import (
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"syscall"
)

// The variables naming the profiles' files; unset: no profile.
const (
	EnvCPU    = "MCPFN_PPROF_COLD"
	EnvAllocs = "MCPFN_PPROF_COLD_ALLOCS"
)

// Hz is the CPU sampling rate asked for (runtime/pprof's own is 100 Hz).
// The profile records it, so pprof scales by it.
const Hz = 1000

// Start begins the profiles the environment asks for, and stops and writes
// them on SIGUSR1. It reports problems on stderr and never stops the
// process.
func Start() {
	cpuPath, allocsPath := os.Getenv(EnvCPU), os.Getenv(EnvAllocs)
	if cpuPath == "" && allocsPath == "" {
		return
	}
	var cpu *os.File
	if cpuPath != "" {
		var err error
		if cpu, err = startCPU(cpuPath); err != nil {
			fmt.Fprintln(os.Stderr, "coldprof:", err)
		}
	}
	if allocsPath != "" {
		runtime.MemProfileRate = 1
	}
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	go func() {
		<-usr1
		signal.Stop(usr1)
		if cpu != nil {
			pprof.StopCPUProfile()
			report(commit(cpu, cpuPath))
		}
		if allocsPath != "" {
			report(writeAllocs(allocsPath))
		}
	}()
}

func startCPU(path string) (*os.File, error) {
	f, err := os.Create(path + ".part")
	if err != nil {
		return nil, err
	}
	// Set first, the rate holds: StartCPUProfile's own 100 Hz is then
	// refused (the runtime prints a line saying so on stderr).
	runtime.SetCPUProfileRate(Hz)
	if err := pprof.StartCPUProfile(f); err != nil {
		runtime.SetCPUProfileRate(0)
		f.Close()
		return nil, err
	}
	return f, nil
}

func writeAllocs(path string) error {
	f, err := os.Create(path + ".part")
	if err != nil {
		return err
	}
	runtime.GC() // the profile counts allocations up to the last GC
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return commit(f, path)
}

// commit closes f, the temporary file of path, and renames it into place.
func commit(f *os.File, path string) error {
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(path+".part", path)
}

func report(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "coldprof:", err)
	}
}
