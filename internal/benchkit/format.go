package benchkit

import (
	"fmt"
	"time"
)

// MS formats a duration in milliseconds with two decimals ("1.23 ms"), the
// unit every bench table uses.
func MS(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

// MiB is bytes in mebibytes.
func MiB(b int64) float64 { return float64(b) / (1 << 20) }

// Ratio is a / b as a float; 0 when b is 0 (a figure that was not measured
// gives no ratio rather than an infinity).
func Ratio[T ~int64](a, b T) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}
