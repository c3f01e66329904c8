package localtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/uuid"
)

// emulator is one RIE process serving one function's bootstrap: one
// execution environment. It serves one invoke at a time.
type emulator struct {
	fn    *function
	url   string // the RIE's invoke URL
	proxy *runtimeProxy
	// cur is the invoke of a pooled emulator, from sending it until the
	// emulator is back in the pool.
	cur     atomic.Pointer[invocation]
	cmd     *exec.Cmd
	started time.Time
	exited  chan struct{}
	// pids of the emulator's descendants seen while it ran (its
	// bootstraps, one per init), for Stack.Processes and PeakRSS.
	mu   sync.Mutex
	seen map[int]bool
}

// rieInvokePath is the one path the RIE serves, whatever the function's name.
const rieInvokePath = "/2015-03-31/functions/function/invocations"

// startEmulator starts an RIE on a free port and returns once it accepts
// connections. The RIE starts the bootstrap lazily, on the first invoke, so
// that invoke carries the function's cold start as on Lambda.
func startEmulator(ctx context.Context, fn *function) (*emulator, error) {
	var lastErr error
	for range 3 { // a free port can be taken between probing and binding
		port, err := freeTCPPort()
		if err != nil {
			return nil, err
		}
		apiPort, err := freeTCPPort()
		if err != nil {
			return nil, err
		}
		e, err := fn.stack.spawnEmulator(ctx, fn, port, apiPort)
		if err == nil {
			return e, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, lastErr
}

// spawnEmulator starts one RIE. Besides its invoke port it needs a port for
// the Runtime API it serves the bootstrap (default 127.0.0.1:9001, which
// every emulator after the first would fail to bind).
//
// The bootstrap reaches that Runtime API through a timestamping proxy
// (runtimeproxy.go). The RIE sets AWS_LAMBDA_RUNTIME_API to its own address
// whatever the environment says, so the bootstrap is started through env(1),
// which sets the proxy's address (and _HANDLER, which the RIE would set to
// its last argument) and then execs the bootstrap: same pid, same process.
func (s *Stack) spawnEmulator(ctx context.Context, fn *function, port, apiPort int) (*emulator, error) {
	addr := "127.0.0.1:" + strconv.Itoa(port)
	api := "127.0.0.1:" + strconv.Itoa(apiPort)
	proxy, err := startRuntimeProxy(api)
	if err != nil {
		return nil, fmt.Errorf("localtest: the Runtime API proxy of %s: %w", fn.spec.Name, err)
	}
	cmd := exec.Command(s.rieBin, "--log-level", "error",
		"--runtime-interface-emulator-address", addr,
		"--runtime-api-address", api,
		envCommand(), "AWS_LAMBDA_RUNTIME_API="+proxy.addr(), "_HANDLER=bootstrap", fn.bootstrap)
	cmd.Dir = fn.binDir
	cmd.Env = fn.environ
	cmd.Stdout, cmd.Stderr = fn.log, fn.log
	cmd.SysProcAttr = sysProcAttr()
	e := &emulator{fn: fn, url: "http://" + addr + rieInvokePath, proxy: proxy, cmd: cmd, exited: make(chan struct{}), seen: map[int]bool{}}
	if err := startProcess(cmd, e.exited); err != nil {
		proxy.close()
		return nil, fmt.Errorf("localtest: starting the emulator of %s: %w", fn.spec.Name, err)
	}
	e.started = time.Now()
	s.track(e)
	deadline := time.Now().Add(10 * time.Second)
	// Poll fast at first: the emulator usually listens within milliseconds,
	// and this wait is part of every cold start the router serves.
	poll := time.Millisecond
	for {
		if listening(cmd.Process.Pid, port) {
			return e, nil
		}
		select {
		case <-e.exited:
			return nil, fmt.Errorf("localtest: the emulator of %s exited before listening on %s (see %s)", fn.spec.Name, addr, fn.logPath)
		case <-ctx.Done():
			e.kill()
			return nil, ctx.Err()
		case <-time.After(poll):
		}
		poll = min(2*poll, 20*time.Millisecond)
		if time.Now().After(deadline) {
			e.kill()
			return nil, fmt.Errorf("localtest: the emulator of %s did not listen on %s within 10s", fn.spec.Name, addr)
		}
	}
}

// startProcess starts cmd from an OS thread that lives exactly as long as
// the child: Linux sends the parent-death signal when the forking thread
// exits, and a thread borrowed from any goroutine may be retired early.
// exited is closed once the child has been waited for.
func startProcess(cmd *exec.Cmd, exited chan struct{}) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the child
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = cmd.Wait()
		close(exited)
	}()
	return <-started
}

// envCommand is env(1), which starts each bootstrap (see spawnEmulator).
func envCommand() string {
	if p, err := exec.LookPath("env"); err == nil {
		return p
	}
	return "/usr/bin/env"
}

// invoke sends one invocation and returns as soon as Lambda would answer
// its caller: when the emulator has accepted the runtime's response
// (inv.early(); the answer is that payload), or else with the emulator's
// own answer (a function error, a crash, a timeout). The emulator stays
// busy until it has answered itself, which it does once the runtime and
// every extension subscribed to INVOKE have called next again; release is
// called then (from another goroutine when the caller was answered early),
// after killing an emulator that failed to answer at all. An error is the
// caller's ctx ending first (inv is then still in flight; release follows).
func (e *emulator) invoke(ctx context.Context, body []byte, h http.Header, release func(*invocation)) (*invocation, error) {
	id := h.Get("X-Amzn-RequestId")
	if id == "" {
		id = uuid.NewString()
	}
	// The invoke outlives the caller's ctx as on Lambda, but not the
	// function's timeout (plus slack for the emulator's own answer).
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Duration(e.fn.spec.Timeout)*time.Second+5*time.Second)
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, e.url, bytesReader(body))
	if err != nil {
		cancel()
		return nil, err
	}
	for _, k := range []string{"X-Amz-Client-Context", "X-Amzn-Trace-Id", "X-Amz-Tenant-Id", "X-Amz-Cognito-Identity"} {
		if v := h.Get(k); v != "" {
			req.Header.Set(k, v)
		}
	}
	req.Header.Set("X-Amzn-RequestId", id)
	inv := newInvocation(id)
	inv.notify = e.fn.wake
	e.cur.Store(inv)
	e.proxy.begin(inv)
	inv.sent = time.Now()
	released := make(chan struct{})
	go func() {
		defer cancel()
		e.await(req, inv)
		release(inv)
		close(released)
	}()
	select {
	case <-inv.responded():
	case <-released: // the emulator's own answer, once e is free again
	case <-ctx.Done():
		return inv, ctx.Err()
	}
	return inv, nil
}

// await waits for the emulator's answer to inv and records it.
func (e *emulator) await(req *http.Request, inv *invocation) {
	resp, err := e.fn.stack.rieClient.Do(req)
	var out []byte
	if err == nil {
		out, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	inv.mu.Lock()
	inv.answeredAt = time.Now()
	if resp != nil {
		inv.status = resp.StatusCode
	}
	inv.out, inv.err = out, err
	inv.mu.Unlock()
	e.proxy.end(inv)
	close(inv.finished)
	e.remember()
	if err != nil {
		// The emulator itself failed: its environment is gone for good.
		e.kill()
		return
	}
	if inv.early() {
		// Lambda's PostRuntimeExtensionsDuration, in the function's log
		// next to the emulator's REPORT line.
		inv.mu.Lock()
		n := len(inv.extNext)
		inv.mu.Unlock()
		fmt.Fprintf(e.fn.log, "mcpfn-local: POSTRUNTIME RequestId: %s\tPostRuntimeExtensionsDuration: %.2f ms\tExtensions done: %d\n",
			inv.id, float64(inv.postRuntime().Microseconds())/1000, n)
	}
}

// answer is what the caller of invoke gets: the runtime's accepted
// response (HTTP 200), or the emulator's answer.
func (inv *invocation) answer() (status int, body []byte, err error) {
	if inv.early() {
		return http.StatusOK, inv.response, nil
	}
	return inv.status, inv.out, inv.err
}

// remember records the emulator's current descendants (the bootstrap).
func (e *emulator) remember() {
	if e.cmd.Process == nil {
		return
	}
	pids := descendants(e.cmd.Process.Pid)
	e.mu.Lock()
	for _, p := range pids {
		e.seen[p] = true
	}
	e.mu.Unlock()
}

// pids returns the emulator and every descendant seen, alive or not (for
// reports and tests, never for signals).
func (e *emulator) pids() []int {
	e.remember()
	e.mu.Lock()
	defer e.mu.Unlock()
	out := []int{e.cmd.Process.Pid}
	for p := range e.seen {
		out = append(out, p)
	}
	return out
}

// kill ends the emulator and its bootstrap. The bootstrap runs in a
// process group of its own (the RIE puts it there), so it is killed by pid,
// first, while it is still the emulator's child: a pid remembered from
// earlier could by now belong to an unrelated process.
func (e *emulator) kill() {
	pid := e.cmd.Process.Pid
	var killed []int
	select {
	case <-e.exited:
	default:
		killed = descendants(pid)
		for _, p := range killed {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
	defer e.proxy.close()
	select {
	case <-e.exited:
	case <-time.After(5 * time.Second):
	}
	// SIGKILL is delivered asynchronously and the bootstraps are not our
	// children (nobody here waits for them): wait until they are gone, so
	// that "Close returned" means "no process left".
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if !slices.ContainsFunc(killed, alive) {
			return
		}
	}
}

func freeTCPPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("localtest: finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

var errBusy = errors.New("every emulator of the function is busy")

// function is one function of the stack and its pool of emulators.
type function struct {
	stack     *Stack
	spec      FunctionSpec
	binDir    string
	bootstrap string
	environ   []string
	log       *os.File
	logPath   string
	max       int

	// invocations counts the invokes the router handed to the function.
	invocations atomic.Int64

	mu    sync.Mutex
	idle  []*emulator
	total int // emulators existing or being started
	all   []*emulator
	// changed is closed (and replaced) whenever an emulator is released or
	// its invoke progressed, for the waiters of acquire and waitIdle.
	changed chan struct{}
}

// acquire returns an idle emulator, starting a new one while the function
// is below its concurrency limit, or errBusy — never waits for a busy one:
// Lambda does not queue synchronous invokes either. It only waits for an
// emulator whose invoke has ended as Lambda counts it (the runtime and
// every extension called next) and which is about to answer: on Lambda
// that environment would already be free.
func (f *function) acquire(ctx context.Context) (*emulator, error) {
	if err := f.waitUntil(ctx, func() bool { return len(f.idle) > 0 || !f.settling() }); err != nil {
		return nil, err
	}
	for len(f.idle) > 0 {
		e := f.idle[len(f.idle)-1]
		f.idle = f.idle[:len(f.idle)-1]
		select {
		case <-e.exited:
			f.total-- // died while idle (killed from outside): replace it
			continue
		default:
		}
		f.mu.Unlock()
		return e, nil
	}
	if f.total >= f.max {
		f.mu.Unlock()
		return nil, errBusy
	}
	f.total++
	f.mu.Unlock()
	e, err := startEmulator(ctx, f)
	if err != nil {
		f.mu.Lock()
		f.total--
		f.mu.Unlock()
		return nil, err
	}
	f.mu.Lock()
	f.all = append(f.all, e)
	f.mu.Unlock()
	return e, nil
}

// settling reports whether an emulator is about to be free (f.mu held;
// see invocation.settling).
func (f *function) settling() bool {
	for _, e := range f.all {
		if inv := e.cur.Load(); inv != nil && inv.settling() {
			return true
		}
	}
	return false
}

// wake tells the waiters of acquire and waitIdle to look again.
func (f *function) wake() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.wakeLocked()
}

func (f *function) wakeLocked() {
	if f.changed != nil {
		close(f.changed)
		f.changed = nil
	}
}

// release returns e to the pool, unless its process has died.
func (f *function) release(e *emulator) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e.cur.Store(nil)
	f.wakeLocked()
	select {
	case <-e.exited:
		f.total--
		return
	default:
	}
	f.idle = append(f.idle, e)
}

// waitIdle returns once the pool has an idle emulator, or room for one.
func (f *function) waitIdle(ctx context.Context) error {
	if err := f.waitUntil(ctx, func() bool { return len(f.idle) > 0 || f.total < f.max }); err != nil {
		return err
	}
	f.mu.Unlock()
	return nil
}

// waitUntil locks f.mu and returns, still holding it, once cond (called
// with f.mu held) is true; it looks again whenever an emulator is released
// or an invoke progresses. On an error f.mu is not held.
func (f *function) waitUntil(ctx context.Context, cond func() bool) error {
	f.mu.Lock()
	for !cond() {
		if f.changed == nil {
			f.changed = make(chan struct{})
		}
		ch := f.changed
		f.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		f.mu.Lock()
	}
	return nil
}

// warm starts n emulators and puts them in the pool.
func (f *function) warm(ctx context.Context, n int) error {
	held := make([]*emulator, 0, n)
	defer func() {
		for _, e := range held {
			f.release(e)
		}
	}()
	for range n {
		e, err := f.acquire(ctx)
		if err != nil {
			return err
		}
		held = append(held, e)
	}
	return nil
}

func (f *function) emulators() []*emulator {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*emulator(nil), f.all...)
}
