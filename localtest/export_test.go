package localtest

import (
	"context"
	"time"
)

// Alive reports whether a pid names a living (non-zombie) process.
var Alive = alive

// WaitIdle returns once function has an execution environment free for an
// invoke (an idle one, or room for a new one).
func (s *Stack) WaitIdle(ctx context.Context, function string) error {
	return s.functions[function].waitIdle(ctx)
}

// AdvanceIAMClock moves the clock the stack checks signatures and
// presigned URLs' expiry against by d, until the returned func restores
// it. Every service's SigV4 check tolerates 15 minutes of skew, so a move
// of a minute or two leaves the other callers' requests valid.
func (s *Stack) AdvanceIAMClock(d time.Duration) (restore func()) {
	s.iam.auth.SetClock(func() time.Time { return time.Now().Add(d) })
	return func() { s.iam.auth.SetClock(time.Now) }
}
