package localtest

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// Alive reports whether a pid names a living (non-zombie) process.
var Alive = alive

// ColdStart starts a fresh emulator of function, sends it payload and
// returns the time from starting the emulator process to the first
// response — Lambda's cold start as the caller sees it: process start,
// runtime init, first invoke — and the bootstrap's peak RSS afterwards.
func (s *Stack) ColdStart(ctx context.Context, function string, payload []byte) (time.Duration, int64, error) {
	f := s.functions[function]
	if f == nil {
		return 0, 0, fmt.Errorf("no function %s", function)
	}
	began := time.Now()
	e, err := startEmulator(ctx, f)
	if err != nil {
		return 0, 0, err
	}
	defer e.kill()
	resp, body, err := e.invoke(ctx, payload, http.Header{})
	if err != nil {
		return 0, 0, err
	}
	took := time.Since(began)
	if resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("cold invoke of %s: HTTP %d: %s", function, resp.StatusCode, body)
	}
	var rss int64
	for _, p := range e.pids()[1:] {
		rss = max(rss, peakRSS(p))
	}
	return took, rss, nil
}
