//go:build !linux

package benchkit

// PeakRSS is 0 where there is no /proc: the reports then show no memory.
func PeakRSS(int) int64 { return 0 }
