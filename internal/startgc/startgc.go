// Package startgc moves a process's first garbage collections past its
// first answer. A Go process starts with a 4 MB heap goal; the AWS SDK's
// tables and a first request's decoders, readers and clients cross it, so
// a cold start runs one or two collection cycles — their mark work and
// the allocating goroutines' assists — before it answers. From Begin until its end (the first answer, or a time limit,
// whichever comes first) the collector runs at a higher GOGC, so those
// cycles come after the answer instead: the CPU is spent all the same,
// later, and the heap may grow to five times its live size meanwhile
// (docs/decisions/0041-gc-after-the-first-answer.md).
//
// A GOGC or GOMEMLIMIT the operator set is left alone: Begin does nothing.
package startgc

import (
	"os"
	"runtime/debug"
	"sync"
	"time"
)

// Percent is the GOGC of a process between Begin and the end it returns.
const Percent = 400

// Limit bounds how long the setting lasts when no first answer ends it: a
// process that is never asked anything, or whose first request fails early.
const Limit = 5 * time.Second

// Begin raises the collector's GOGC to Percent and returns the function
// that restores it (idempotent, safe from any goroutine). The setting also
// ends by itself after Limit. With GOGC or GOMEMLIMIT set in the
// environment it changes nothing and returns a no-op.
func Begin() (end func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	prev := debug.SetGCPercent(Percent)
	restore := sync.OnceFunc(func() { debug.SetGCPercent(prev) })
	time.AfterFunc(Limit, restore) // a no-op once the first answer has restored it
	return restore
}
