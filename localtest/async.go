package localtest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Asynchronous invocation (InvocationType Event) on the local stack, as
// Lambda runs it (docs/local.md): the Invoke API answers 202 at once and
// queues the event; it runs on the function's pool, waiting for a free
// environment rather than being refused; a function error (or a crash, a
// timeout) is retried up to the function's MaximumRetryAttempts, after the
// stack's AsyncRetryDelays, with the same request id, as long as the event
// is younger than MaximumEventAgeInSeconds. Stack.Close drops what is
// still queued.

// EventInvokeConfig is a function's asynchronous invocation settings, the
// template's EventInvokeConfig (its own, else Globals').
type EventInvokeConfig struct {
	// MaximumRetryAttempts after a failed run: 0 to 2.
	MaximumRetryAttempts int
	// MaximumEventAge: an event older than this is not retried.
	MaximumEventAge time.Duration
}

// lambdaEventInvoke is Lambda's default: two retries, six hours.
var lambdaEventInvoke = EventInvokeConfig{MaximumRetryAttempts: 2, MaximumEventAge: 6 * time.Hour}

// DefaultAsyncRetryDelays are Lambda's waits before the first and the
// second retry of a failed asynchronous invocation.
var DefaultAsyncRetryDelays = []time.Duration{time.Minute, 2 * time.Minute}

// asyncRuns are the stack's queued and running asynchronous invokes.
type asyncRuns struct {
	rt     router
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newAsyncRuns(s *Stack) *asyncRuns {
	ctx, cancel := context.WithCancel(context.Background())
	return &asyncRuns{rt: router{s}, ctx: ctx, cancel: cancel}
}

// enqueue runs an accepted event in the background.
func (a *asyncRuns) enqueue(fn *function, body []byte, h http.Header, reqID string) {
	a.wg.Add(1)
	go a.run(fn, body, h, reqID)
}

// stop drops the queued events and waits for the runs to end; the caller
// kills the emulators, which ends the runs in flight.
func (a *asyncRuns) stop(kill func()) {
	a.cancel()
	kill()
	a.wg.Wait()
}

func (a *asyncRuns) run(fn *function, body []byte, h http.Header, reqID string) {
	defer a.wg.Done()
	cfg := lambdaEventInvoke
	if fn.spec.EventInvoke != nil {
		cfg = *fn.spec.EventInvoke
	}
	received := time.Now()
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			select {
			case <-a.ctx.Done():
				return
			case <-time.After(a.delay(attempt)):
			}
			if age := time.Since(received); age > cfg.MaximumEventAge {
				a.logf(fn, reqID, "dropped: the event is %v old, older than its MaximumEventAge %v", age.Round(time.Millisecond), cfg.MaximumEventAge)
				return
			}
		}
		e, err := fn.acquireWaiting(a.ctx)
		if err != nil {
			if a.ctx.Err() == nil {
				a.logf(fn, reqID, "attempt %d: no execution environment: %v", attempt+1, err)
			}
			return
		}
		fn.invocations.Add(1)
		out, fnErr, err := a.rt.call(a.ctx, fn, e, body, h)
		if err == nil && fnErr == "" {
			return
		}
		if err == nil {
			err = fmt.Errorf("function error: %.300s", out)
		}
		if attempt >= cfg.MaximumRetryAttempts {
			a.logf(fn, reqID, "attempt %d failed, no retry left (MaximumRetryAttempts %d): %v", attempt+1, cfg.MaximumRetryAttempts, err)
			return
		}
		a.logf(fn, reqID, "attempt %d failed, retrying: %v", attempt+1, err)
	}
}

// delay is the wait before retry n (1-based).
func (a *asyncRuns) delay(n int) time.Duration {
	d := a.rt.s.cfg.AsyncRetryDelays
	return d[min(n, len(d))-1]
}

func (a *asyncRuns) logf(fn *function, reqID, format string, args ...any) {
	fmt.Fprintf(fn.log, "mcpfn-local: ASYNC RequestId: %s\t%s\n", reqID, fmt.Sprintf(format, args...))
}

// acquireWaiting is acquire for a queued event: it waits for a busy pool
// instead of refusing.
func (f *function) acquireWaiting(ctx context.Context) (*emulator, error) {
	for {
		e, err := f.acquire(ctx)
		if !errors.Is(err, errBusy) {
			return e, err
		}
		if err := f.waitIdle(ctx); err != nil {
			return nil, err
		}
	}
}

// eventInvokeConfig reads a function's EventInvokeConfig (SAM), its own or
// Globals'; nil when neither sets one.
func (n *localNames) eventInvokeConfig(logicalID string) *EventInvokeConfig {
	r, _ := n.t.Resource(logicalID)
	m, ok := r.Properties["EventInvokeConfig"].(map[string]any)
	if !ok {
		g, _ := n.t.Globals["Function"].(map[string]any)
		if m, ok = g["EventInvokeConfig"].(map[string]any); !ok {
			return nil
		}
	}
	cfg := lambdaEventInvoke
	if s, err := n.value(m["MaximumRetryAttempts"]); err == nil && s != "" {
		if i, err := strconv.Atoi(s); err == nil && i >= 0 {
			cfg.MaximumRetryAttempts = i
		}
	}
	if s, err := n.value(m["MaximumEventAgeInSeconds"]); err == nil && s != "" {
		if i, err := strconv.Atoi(s); err == nil && i > 0 {
			cfg.MaximumEventAge = time.Duration(i) * time.Second
		}
	}
	return &cfg
}
