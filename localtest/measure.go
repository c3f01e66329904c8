package localtest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"time"
)

// ColdStart starts a fresh emulator of function, sends it payload and
// returns the time from starting the emulator process to the first
// response — Lambda's cold start as the caller sees it: process start,
// runtime init, first invoke — and the bootstrap's peak RSS (VmHWM, bytes)
// afterwards. The emulator is stopped before it returns.
func (s *Stack) ColdStart(ctx context.Context, function string, payload []byte) (time.Duration, int64, error) {
	e, err := s.Hold(ctx, function)
	if err != nil {
		return 0, 0, err
	}
	defer e.Close()
	began := e.began
	if _, err := e.Invoke(ctx, payload); err != nil {
		return 0, 0, err
	}
	return time.Since(began), e.PeakRSS(), nil
}

// Emulator is one fresh execution environment of a function, held by the
// caller alone and invoked directly (not through the Invoke API's router):
// what a benchmark needs to time the function and nothing in front of it.
type Emulator struct {
	e     *emulator
	began time.Time // before the emulator process was started
}

// Hold starts a fresh emulator of function, outside the function's pool.
// Its first Invoke is the function's cold start. Close it when done.
func (s *Stack) Hold(ctx context.Context, function string) (*Emulator, error) {
	f := s.functions[function]
	if f == nil {
		return nil, fmt.Errorf("localtest: no function %s", function)
	}
	began := time.Now()
	e, err := startEmulator(ctx, f)
	if err != nil {
		return nil, err
	}
	return &Emulator{e: e, began: began}, nil
}

// Invoke sends payload and returns the function's answer; a status other
// than 200 is an error.
func (h *Emulator) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	resp, body, err := h.e.invoke(ctx, payload, http.Header{})
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("localtest: invoke of %s: HTTP %d: %s", h.e.fn.spec.Name, resp.StatusCode, body)
	}
	return body, nil
}

// PeakRSS is the largest peak resident set size (VmHWM, bytes) of the
// emulator's bootstrap processes (0 where /proc is unavailable).
func (h *Emulator) PeakRSS() int64 {
	var rss int64
	for _, p := range h.e.pids()[1:] {
		rss = max(rss, peakRSS(p))
	}
	return rss
}

// Started is when the emulator process was about to be started: a cold
// start is timed from here to the first answer.
func (h *Emulator) Started() time.Time { return h.began }

// Close stops the emulator and its bootstrap.
func (h *Emulator) Close() { h.e.kill() }

// BootstrapSize is the size in bytes of function's built bootstrap.
func (s *Stack) BootstrapSize(function string) (int64, error) {
	f := s.functions[function]
	if f == nil {
		return 0, fmt.Errorf("localtest: no function %s", function)
	}
	fi, err := os.Stat(f.bootstrap)
	if err != nil {
		return 0, fmt.Errorf("localtest: %w", err)
	}
	return fi.Size(), nil
}
