package localtest

import "context"

// Alive reports whether a pid names a living (non-zombie) process.
var Alive = alive

// WaitIdle returns once function has an execution environment free for an
// invoke (an idle one, or room for a new one).
func (s *Stack) WaitIdle(ctx context.Context, function string) error {
	return s.functions[function].waitIdle(ctx)
}
