package main

import (
	"os"
	"strconv"
	"strings"
)

// A soak on a shared machine is read against what else ran: each sample
// also takes the CPU time of the whole machine and of the stack's processes
// (this one — the stand-ins, the proxies, the clients — the gateway, the
// emulators and their bootstraps, DynamoDB Local), so that a bucket whose
// latency rose can be told apart from a bucket in which something else
// took the cores.

// cpuCounters are cumulative CPU times, in clock ticks, at one sample.
type cpuCounters struct {
	machineBusy, machineTotal uint64         // /proc/stat's "cpu" line: all but idle and iowait; all
	procs                     map[int]uint64 // utime+stime of each of the stack's processes
	load1                     float64        // /proc/loadavg's 1-minute figure
	ok                        bool           // /proc was readable
}

// cpuUse is the CPU used between two samples, in cores (1 = one core busy
// the whole interval).
type cpuUse struct {
	Machine, Stack float64
	Load1          float64 // at the later sample
}

// readCPU reads the machine's counters and those of pids.
func readCPU(pids []int) cpuCounters {
	c := cpuCounters{procs: map[int]uint64{}}
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return c
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return c
	}
	for i, v := range f[1:] {
		n, _ := strconv.ParseUint(v, 10, 64)
		c.machineTotal += n
		if i != 3 && i != 4 { // idle, iowait
			c.machineBusy += n
		}
	}
	for _, pid := range pids {
		if t, ok := procCPU(pid); ok {
			c.procs[pid] = t
		}
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			c.load1, _ = strconv.ParseFloat(f[0], 64)
		}
	}
	c.ok = true
	return c
}

// procCPU is a process's utime+stime in clock ticks.
func procCPU(pid int) (uint64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The fields after the parenthesised command name: state is the 3rd
	// field of the line, utime the 14th and stime the 15th.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	return u + st, err1 == nil && err2 == nil
}

// between is the CPU used from prev to c over cpus cores. A process seen
// only at c counts from its start (it began within the interval, or its
// earlier time is the stack's all the same); one gone by c is lost for the
// interval's part it ran — a short-lived process, a small error.
func between(prev, c cpuCounters, cpus int) (cpuUse, bool) {
	if !prev.ok || !c.ok || c.machineTotal <= prev.machineTotal {
		return cpuUse{}, false
	}
	perCore := float64(c.machineTotal-prev.machineTotal) / float64(cpus) // ticks elapsed
	var stack uint64
	for pid, t := range c.procs {
		if p, ok := prev.procs[pid]; ok && t >= p {
			stack += t - p
		} else if !ok {
			stack += t
		}
	}
	return cpuUse{
		Machine: float64(c.machineBusy-prev.machineBusy) / perCore,
		Stack:   min(float64(stack)/perCore, float64(cpus)),
		Load1:   c.load1,
	}, true
}
