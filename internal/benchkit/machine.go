package benchkit

import (
	"fmt"
	"os"
	"runtime"
	"strings"
)

// LoadAvg is /proc/loadavg's three load averages ("?" where there is none).
// A bench prints it at its start and end: on a shared machine it says how
// far the absolute figures can be trusted.
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// CPUModel is /proc/cpuinfo's first model name.
func CPUModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "model unknown"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "model unknown"
}

// MachineLine is the first line of every bench report: CPUs, model, Go,
// platform and the load averages at the start and the end of the run.
func MachineLine(loadStart, loadEnd string) string {
	return fmt.Sprintf("machine: %d CPUs (%s), %s, %s/%s; load average %s at start, %s at end",
		runtime.NumCPU(), CPUModel(), runtime.Version(), runtime.GOOS, runtime.GOARCH, loadStart, loadEnd)
}
