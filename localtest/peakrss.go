package localtest

import "github.com/mcpfn/mcpfn/internal/benchkit"

// peakRSS returns a process's peak resident set size in bytes (VmHWM), 0
// where it cannot be read: the benches' reading (internal/benchkit).
func peakRSS(pid int) int64 { return benchkit.PeakRSS(pid) }
