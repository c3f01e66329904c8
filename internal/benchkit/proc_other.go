//go:build !linux

package benchkit

import "time"

// PeakRSS is 0 where there is no /proc: the reports then show no memory.
func PeakRSS(int) int64 { return 0 }

// ProcessCPU is 0 where there is no /proc.
func ProcessCPU(int) time.Duration { return 0 }

// ThreadsCPU is 0 where there is no /proc.
func ThreadsCPU(int) time.Duration { return 0 }
