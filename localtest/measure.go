package localtest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"time"
)

// ColdStart starts a fresh emulator of function, sends it payload and
// returns the time from starting the emulator process to the answer —
// Lambda's cold start as the caller sees it: process start, runtime init,
// first invoke, up to the runtime's response (not the extensions' work
// after it) — and the bootstrap's peak RSS (VmHWM, bytes) once the invoke
// has finished. The emulator is stopped before it returns.
func (s *Stack) ColdStart(ctx context.Context, function string, payload []byte) (time.Duration, int64, error) {
	e, err := s.Hold(ctx, function)
	if err != nil {
		return 0, 0, err
	}
	defer e.Close()
	inv, err := e.Call(ctx, payload)
	if err != nil {
		return 0, 0, err
	}
	d := inv.Answered.Sub(e.began)
	if err := inv.Wait(ctx); err != nil {
		return 0, 0, err
	}
	return d, e.PeakRSS(), nil
}

// Emulator is one fresh execution environment of a function, held by the
// caller alone and invoked directly (not through the Invoke API's router):
// what a benchmark needs to time the function and nothing in front of it.
type Emulator struct {
	e     *emulator
	began time.Time // before the emulator process was started
	busy  *invocation
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

// Invocation is one invoke of a held emulator: the caller's answer, when it
// came, and the timeline the Runtime API proxy recorded.
type Invocation struct {
	// Status and Payload are the answer: the runtime's response with 200
	// as soon as the emulator accepted it (Early), or the emulator's own
	// answer (function errors, crashes, timeouts).
	Status  int
	Payload []byte
	Early   bool
	// Sent is when the invoke was sent, Answered when the caller had the
	// answer: Answered−Sent is the caller-visible duration.
	Sent, Answered time.Time
	inv            *invocation
}

// Duration is the caller-visible duration of the invoke.
func (i *Invocation) Duration() time.Duration { return i.Answered.Sub(i.Sent) }

// Wait blocks until the execution environment is free again: the emulator
// has answered, which it does once the runtime and every extension
// subscribed to INVOKE have called next.
func (i *Invocation) Wait(ctx context.Context) error {
	select {
	case <-i.inv.finished:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// PostRuntime is the local PostRuntimeExtensionsDuration: from the
// runtime's response POST to the emulator's answer, i.e. the time the
// environment stayed busy after the caller was answered. Zero until Wait
// returned, and for an invoke that was not answered early.
func (i *Invocation) PostRuntime() time.Duration { return i.inv.postRuntime() }

// Timeline is what the Runtime API proxy saw of an invoke; zero times did
// not happen (yet).
type Timeline struct {
	RuntimeNext time.Time // the runtime's next returned the invoke
	// ExtensionEvent is when the first extension subscribed to INVOKE got
	// the invoke's event (zero without one).
	ExtensionEvent time.Time
	Posted         time.Time // the runtime's response or error POST arrived
	Accepted       time.Time // the emulator accepted the response
	// RuntimeDone is the runtime's next after its POST: it is done with
	// the invoke (work after the response delays it).
	RuntimeDone time.Time
	// ExtensionNext are the extensions' event/next calls once the runtime
	// had the invoke: each is an extension done with it.
	ExtensionNext []time.Time
	Released      time.Time // the emulator answered: the environment is free
}

// Timeline returns the invoke's timeline so far.
func (i *Invocation) Timeline() Timeline {
	inv := i.inv
	inv.mu.Lock()
	defer inv.mu.Unlock()
	return Timeline{RuntimeNext: inv.nextAt, ExtensionEvent: inv.extEventAt, Posted: inv.postedAt, Accepted: inv.acceptedAt, RuntimeDone: inv.runtimeDone,
		ExtensionNext: append([]time.Time(nil), inv.extNext...), Released: inv.answeredAt}
}

// Call sends payload and returns the answer as soon as Lambda would give it
// (see Invocation). The environment is busy until the invoke has finished
// (Invocation.Wait): a Call waits for the previous one to finish before it
// sends, as Lambda gives an environment no new invoke before that.
func (h *Emulator) Call(ctx context.Context, payload []byte) (*Invocation, error) {
	if h.busy != nil {
		select {
		case <-h.busy.finished:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	inv, err := h.e.invoke(ctx, payload, http.Header{}, func(*invocation) {})
	if inv != nil {
		h.busy = inv
	}
	if err != nil {
		return nil, err
	}
	answered := time.Now()
	status, body, err := inv.answer()
	if err != nil {
		return nil, err
	}
	return &Invocation{Status: status, Payload: body, Early: inv.early(), Sent: inv.sent, Answered: answered, inv: inv}, nil
}

// Invoke sends payload and returns the function's answer; a status other
// than 200 is an error.
func (h *Emulator) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	inv, err := h.Call(ctx, payload)
	if err != nil {
		return nil, err
	}
	if inv.Status != http.StatusOK {
		return nil, fmt.Errorf("localtest: invoke of %s: HTTP %d: %s", h.e.fn.spec.Name, inv.Status, inv.Payload)
	}
	return inv.Payload, nil
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

// Extensions are the names of the extensions the bootstrap registered in
// its init (the Extensions API's Lambda-Extension-Name): after its first
// invoke, everything it registered. A function that registers one gets
// Lambda's SIGTERM before its environment is shut down.
func (h *Emulator) Extensions() []string { return h.e.proxy.extensions() }

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

// Settle waits until no execution environment of any function is busy:
// every invoke answered and every extension done with it (Lambda's
// post-runtime phase over). A function writes its final audit rows after it
// has answered (docs/audit.md), so a test that reads rows right after a
// call settles the stack first.
func (s *Stack) Settle(ctx context.Context) error {
	for _, f := range s.functions {
		if err := f.waitUntil(ctx, func() bool { return len(f.idle) >= f.total }); err != nil {
			return err
		}
		f.mu.Unlock()
	}
	return nil
}

// ProcessMemory is one process of the stack and its memory, as /proc says.
type ProcessMemory struct {
	// Component is GatewayComponent, DynamoDBLocalComponent or the name of
	// the function whose execution environment (bootstrap) the process is.
	Component string
	PID       int
	RSS       int64 // resident set size now (VmRSS), bytes
	PeakRSS   int64 // peak resident set size (VmHWM), bytes
}

// The components of [ProcessMemory] that are not functions.
const (
	GatewayComponent       = gatewayID
	DynamoDBLocalComponent = "DynamoDBLocal"
)

// Memory returns the memory of every living process of the stack: the
// gateway, each function's bootstraps (one per execution environment that
// has had its first invoke) and DynamoDB Local's JVM when the stack started
// it. The stack's own process — the Invoke API, the stand-ins, the proxies —
// is the caller's (/proc/self). Empty where /proc is unavailable.
func (s *Stack) Memory() []ProcessMemory {
	var out []ProcessMemory
	add := func(component string, pid int) {
		if pid == 0 || !alive(pid) {
			return
		}
		if r := rss(pid); r > 0 {
			out = append(out, ProcessMemory{Component: component, PID: pid, RSS: r, PeakRSS: peakRSS(pid)})
		}
	}
	add(GatewayComponent, s.gwProc.pid())
	for _, name := range s.Functions() {
		for _, e := range s.functions[name].emulators() {
			for _, p := range e.pids()[1:] {
				add(name, p)
			}
		}
	}
	add(DynamoDBLocalComponent, s.ddb.PID())
	return out
}
