//go:build unix

package gateway

import "syscall"

// processCPU returns the CPU time (user + system) this process has used, in
// nanoseconds. Unlike wall time it is not inflated by other processes
// competing for the machine's cores.
func processCPU() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
