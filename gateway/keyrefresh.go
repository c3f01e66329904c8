package gateway

import (
	"context"
	"sync"
	"time"
)

// keyRefresher refreshes an issuer's key set when a token names a kid the
// cache lacks (issue 10, L4). Every refresh fetches the whole set, so it
// serves every token, whoever triggered it. The rules:
//
//   - at most one refresh per interval, started by whichever token asks
//     first once the interval has passed; tokens arriving while it runs
//     wait for it;
//   - a token that asks within the interval is refused at once (no wait, no
//     fetch): the refresh that ran in that interval started before it, and
//     the next one, within the interval, is started by the next token that
//     asks — a retry of this one, or anyone's.
//
// So a flood of tokens with made-up kids costs the issuer one fetch per
// interval and no caller any waiting, and a key the issuer has published is
// usable at the latest one interval after the first token that needs it.
// Only tokens that passed every check needing no key get here.
type keyRefresher struct {
	every time.Duration
	fetch func(context.Context) error

	mu       sync.Mutex
	last     time.Time     // start of the last refresh
	inflight chan struct{} // closed when the running refresh ends
}

// refresh runs or joins a refresh and reports whether one completed, in
// which case the caller reads the cache again.
func (r *keyRefresher) refresh(ctx context.Context) bool {
	r.mu.Lock()
	if ch := r.inflight; ch != nil {
		r.mu.Unlock()
		select {
		case <-ch:
			return true
		case <-ctx.Done():
			return false
		}
	}
	if !r.last.IsZero() && time.Since(r.last) < r.every {
		r.mu.Unlock()
		return false
	}
	r.last = time.Now()
	ch := make(chan struct{})
	r.inflight = ch
	r.mu.Unlock()

	// Detached from the request: a caller that hangs up must not abort the
	// refresh the others are waiting for. The fetch has its own timeout.
	err := r.fetch(context.WithoutCancel(ctx))

	r.mu.Lock()
	r.inflight = nil
	r.mu.Unlock()
	close(ch)
	return err == nil
}
