// Package benchkit is what the end-to-end benchmarks under bench/ share
// (`make bench-lambda`, `make bench-gateway`): the statistics they report
// (percentiles, medians, means), the machine line that says how loaded the
// machine was, peak RSS read from /proc, the deployed build of a main
// package, and the table of bounds with PASS or MISS.
//
// It measures and formats; it never asserts a time. The benchmarks' figures
// are judged by a person reading docs/benchmarks.md, not by a test.
package benchkit
