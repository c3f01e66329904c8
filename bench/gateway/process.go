package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/mcpfn/mcpfn/internal/benchkit"
)

// server is one gateway binary and how to run it.
type server struct {
	name string // "mcpfn" or "bare": its log is logs/<name>-gateway.log
	bin  string
	env  []string
	// listenVar is the variable its listen address goes in.
	listenVar string
	logPath   string
}

// process is one running gateway process.
type process struct {
	cmd    *exec.Cmd
	url    string // its MCP endpoint
	addr   string
	began  time.Time // just before the process was started
	exited chan struct{}
	log    *os.File
}

// start runs a fresh process of s on a free loopback port and returns once
// the port accepts connections (the time that took is listening's).
func (s server) start(ctx context.Context, extraEnv ...string) (*process, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	lf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(s.bin)
	cmd.Env = append(append(append([]string{}, s.env...), s.listenVar+"="+addr), extraEnv...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = sysProcAttr()
	p := &process{cmd: cmd, addr: addr, url: "http://" + addr + "/mcp", exited: make(chan struct{}), log: lf}
	p.began = time.Now()
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("starting %s: %w", s.name, err)
	}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	if err := p.waitListening(ctx); err != nil {
		p.stop()
		return nil, fmt.Errorf("%s: %w (see %s)", s.name, err, s.logPath)
	}
	return p, nil
}

// waitListening polls the port every 200 µs: the same few microseconds of
// polling delay for both gateways, whose cold starts are tens of
// milliseconds.
func (p *process) waitListening(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", p.addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-p.exited:
			return errors.New("the process exited before it listened")
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not listening on %s after 30 s", p.addr)
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// peakRSS is the process's VmHWM so far (it must still be running).
func (p *process) peakRSS() int64 { return benchkit.PeakRSS(p.cmd.Process.Pid) }

// stop ends the process with SIGTERM (both gateways shut down on it), then
// SIGKILL after 5 s, and waits for it.
func (p *process) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	p.log.Close()
}

// freeAddr is a loopback address with a port free a moment ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
