// Package localgateway is the gateway's local mode: what Lambda gives the
// GatewayFunction on AWS, given instead by the local stack (package
// localtest), which runs mcpfn-gateway as a process of its own — as on
// Lambda, so that its memory, its start and its failures are its own.
//
// The stack binds the gateway's listening socket itself (a port in use fails
// the stack's start before anything slow, and no other process can take the
// port between probing and binding) and hands it over as an inherited file;
// it learns that the gateway serves from a pipe the gateway closes once it
// does, not from polling; and it asks for the stand-in of Lambda's active
// tracing, which opens the function's segment of each request (Tracing).
// mcpfn-gateway serves this way when EnvListenFD is set, and only then.
package localgateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/mcpfn/mcpfn/audit"
)

// The variables the local stack sets for the gateway's process (never set on
// AWS).
const (
	// EnvListenFD is the number of the inherited file descriptor of the
	// listening TCP socket to serve on.
	EnvListenFD = "MCPFN_LOCAL_LISTEN_FD"
	// EnvReadyFD is the number of the inherited write end of a pipe: the
	// gateway writes ReadyLine to it once it serves, and closes it. A
	// gateway that exits before closes it without the line.
	EnvReadyFD = "MCPFN_LOCAL_READY_FD"
	// EnvTraceSegment names the function segment the tracing stand-in opens
	// for each request (the gateway's logical id); empty: none.
	EnvTraceSegment = "MCPFN_LOCAL_TRACE_SEGMENT"
)

// ReadyLine is what the gateway writes to EnvReadyFD once it serves.
const ReadyLine = "ready\n"

// shutdownGrace bounds the graceful part of a stop: the stack waits a little
// longer before it kills the process.
const shutdownGrace = 3 * time.Second

// Requested reports whether the local stack started this process.
func Requested() bool { return os.Getenv(EnvListenFD) != "" }

// Logger is the gateway's logger in local mode: JSON lines on stderr, which
// the stack writes to .local/logs/GatewayFunction.log.
func Logger() *slog.Logger { return slog.New(slog.NewJSONHandler(os.Stderr, nil)) }

// Serve serves h on the inherited listener — behind the tracing stand-in
// when EnvTraceSegment and AWS_XRAY_DAEMON_ADDRESS are set — signals
// readiness, and returns after SIGTERM or SIGINT once the requests in
// flight are answered (at most a few seconds).
func Serve(h http.Handler) error {
	ln, err := inheritedListener()
	if err != nil {
		return err
	}
	if name, addr := os.Getenv(EnvTraceSegment), os.Getenv("AWS_XRAY_DAEMON_ADDRESS"); name != "" && addr != "" {
		em, err := audit.NewXRayEmitter(addr)
		if err != nil {
			return err
		}
		h = Tracing(h, name, em)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	if err := signalReady(); err != nil {
		return err
	}
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	return nil
}

func inheritedListener() (net.Listener, error) {
	f, err := inheritedFile(EnvListenFD, "listener")
	if err != nil {
		return nil, err
	}
	defer f.Close() // FileListener keeps a duplicate
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("localgateway: %s: %w", EnvListenFD, err)
	}
	return ln, nil
}

// signalReady writes ReadyLine to EnvReadyFD (when set) and closes it.
func signalReady() error {
	if os.Getenv(EnvReadyFD) == "" {
		return nil
	}
	f, err := inheritedFile(EnvReadyFD, "ready")
	if err != nil {
		return err
	}
	_, err = f.WriteString(ReadyLine)
	return errors.Join(err, f.Close())
}

func inheritedFile(env, name string) (*os.File, error) {
	fd, err := strconv.Atoi(os.Getenv(env))
	if err != nil || fd < 3 {
		return nil, fmt.Errorf("localgateway: %s=%q: want the number of an inherited file descriptor", env, os.Getenv(env))
	}
	return os.NewFile(uintptr(fd), name), nil
}
