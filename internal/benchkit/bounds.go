package benchkit

import (
	"fmt"
	"io"
)

// Bound is one measured figure against the most an issue allows.
type Bound struct {
	What  string
	Got   float64
	Limit float64
	Unit  string // "×" or " MiB"
}

// Verdict is "PASS", or "MISS (n % over)".
func (b Bound) Verdict() string {
	if b.Got > b.Limit {
		return fmt.Sprintf("MISS (%.0f %% over)", (b.Got/b.Limit-1)*100)
	}
	return "PASS"
}

// WriteBounds prints bounds as a Markdown table, one verdict per line.
func WriteBounds(out io.Writer, bounds []Bound) {
	fmt.Fprintln(out, "| ratio | measured | bound | |")
	fmt.Fprintln(out, "|---|---|---|---|")
	for _, b := range bounds {
		fmt.Fprintf(out, "| %s | %.2f%s | ≤ %g%s | %s |\n", b.What, b.Got, b.Unit, b.Limit, b.Unit, b.Verdict())
	}
}
