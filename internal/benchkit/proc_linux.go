package benchkit

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// PeakRSS returns a living process's peak resident set size in bytes
// (VmHWM in /proc/<pid>/status), 0 when it cannot be read.
func PeakRSS(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}

// clockTicks is USER_HZ, the unit of /proc's CPU times: 100 on every Linux
// the benches run on (reading sysconf would need cgo).
const clockTicks = 100

// ProcessCPU returns the CPU time a living process has used so far, user
// and system, summed over its threads (utime + stime in /proc/<pid>/stat,
// 10 ms resolution), 0 when it cannot be read. Between two readings around
// thousands of calls it is the process's CPU per call, which the machine's
// other load does not inflate the way it inflates latency.
func ProcessCPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: count fields after it.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	// After the name: state is field 3, utime 14 and stime 15.
	if len(f) < 13 {
		return 0
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(utime+stime) * time.Second / clockTicks
}

// ThreadsCPU returns the CPU time a living process's threads have run so
// far, in nanoseconds from /proc/<pid>/task/*/schedstat: precise enough for
// a cold start's few milliseconds, where ProcessCPU's 10 ms ticks are not.
// Threads that have exited are not counted (a Go process keeps its threads).
func ThreadsCPU(pid int) time.Duration {
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/schedstat")
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		if f := strings.Fields(string(b)); len(f) > 0 {
			ns, _ := strconv.ParseInt(f[0], 10, 64)
			sum += time.Duration(ns)
		}
	}
	return sum
}
