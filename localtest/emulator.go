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
)

// emulator is one RIE process serving one function's bootstrap: one
// execution environment. It serves one invoke at a time.
type emulator struct {
	fn      *function
	url     string // the RIE's invoke URL
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
func (s *Stack) spawnEmulator(ctx context.Context, fn *function, port, apiPort int) (*emulator, error) {
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(s.rieBin, "--log-level", "error",
		"--runtime-interface-emulator-address", addr,
		"--runtime-api-address", "127.0.0.1:"+strconv.Itoa(apiPort),
		fn.bootstrap)
	cmd.Dir = fn.binDir
	cmd.Env = fn.environ
	cmd.Stdout, cmd.Stderr = fn.log, fn.log
	cmd.SysProcAttr = sysProcAttr()
	e := &emulator{fn: fn, url: "http://" + addr + rieInvokePath, cmd: cmd, exited: make(chan struct{}), seen: map[int]bool{}}
	if err := startProcess(cmd, e.exited); err != nil {
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

// invoke forwards one invocation. The caller holds the emulator exclusively.
func (e *emulator) invoke(ctx context.Context, body []byte, h http.Header) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytesReader(body))
	if err != nil {
		return nil, nil, err
	}
	for _, k := range []string{"X-Amz-Client-Context", "X-Amzn-Trace-Id", "X-Amzn-RequestId", "X-Amz-Tenant-Id", "X-Amz-Cognito-Identity"} {
		if v := h.Get(k); v != "" {
			req.Header.Set(k, v)
		}
	}
	resp, err := e.fn.stack.rieClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	e.remember()
	return resp, b, err
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
}

// acquire returns an idle emulator, starting a new one while the function
// is below its concurrency limit, or errBusy — never waits for a busy one:
// Lambda does not queue synchronous invokes either.
func (f *function) acquire(ctx context.Context) (*emulator, error) {
	f.mu.Lock()
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

// release returns e to the pool, unless its process has died.
func (f *function) release(e *emulator) {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-e.exited:
		f.total--
		return
	default:
	}
	f.idle = append(f.idle, e)
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
