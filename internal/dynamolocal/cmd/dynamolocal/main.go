// Command dynamolocal runs one DynamoDB Local for a whole test run or a
// development session.
//
//	dynamolocal [-port N] [-v] [-- command args...]
//
// With a command, it starts the emulator, runs the command with
// MCPFN_DYNAMODB_ENDPOINT pointing at it, stops the emulator and exits with
// the command's status. `go test ./...` builds one test binary per package
// and each would otherwise start its own JVM (seconds each, on a 2-core
// machine); under this wrapper they all share one:
//
//	go run ./internal/dynamolocal/cmd/dynamolocal -- go test ./...
//
// Without a command it prints `READY endpoint=<url>` and serves until
// interrupted. A first run installs DynamoDB Local into the per-user cache
// (internal/toolcache; progress on stderr).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/mcpfn/mcpfn/internal/dynamolocal"
)

func main() {
	os.Exit(run())
}

func run() int {
	port := flag.Int("port", 0, "TCP port on 127.0.0.1 (0: a free port)")
	verbose := flag.Bool("v", false, "copy the emulator's output to stderr")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: dynamolocal [-port N] [-v] [-- command args...]")
		flag.PrintDefaults()
	}
	flag.Parse()

	// The emulator is in its own process group, so Ctrl-C reaches only us;
	// we stop it on the way out.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var out io.Writer
	if *verbose {
		out = os.Stderr
	}
	began := time.Now()
	srv, err := dynamolocal.Start(ctx, dynamolocal.Options{Port: *port, Stdout: out, Progress: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := srv.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	fmt.Fprintf(os.Stderr, "dynamolocal: DynamoDB Local at %s (started in %v)\n", srv.Endpoint(), time.Since(began).Round(time.Millisecond))

	if flag.NArg() == 0 {
		fmt.Printf("READY endpoint=%s\n", srv.Endpoint())
		<-ctx.Done()
		return 0
	}
	cmd := exec.Command(flag.Arg(0), flag.Args()[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), dynamolocal.EndpointEnv+"="+srv.Endpoint())
	// The child shares our process group, so it gets Ctrl-C from the
	// terminal itself; we only wait for it.
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		if code := exit.ExitCode(); code > 0 {
			return code
		}
		return 1 // killed by a signal
	default:
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
}
