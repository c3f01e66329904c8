// Package progress is a tool that reports progress around a wait, for the
// local stack's tests of streamed invokes: its first progress message
// carries the process id, and, asked to wait, the handler blocks until the
// process receives SIGUSR1 — so a test proves that the first frame reached
// it while the handler was still running. It runs only locally, as an
// ExtraFunctions fixture (function/ is its Lambda main).
package progress

import (
	"context"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/mcpfn/mcpfn/adapter"
)

// Name is the tool's name.
const Name = "progress_fixture"

// Input says whether to wait for SIGUSR1 between the two reports, or to
// report nothing (a plain call, for measurements).
type Input struct {
	Wait  bool `json:"wait,omitempty"`
	Quiet bool `json:"quiet,omitempty"`
}

// Output says whether the handler waited.
type Output struct {
	Released bool `json:"released"`
}

// PIDPrefix starts the first progress message: "pid=<pid>".
const PIDPrefix = "pid="

// Tool returns the tool definition, shared by the gateway's catalog and
// the function.
func Tool() *adapter.Tool {
	return adapter.MustDefine(adapter.ToolDef[Input, Output]{
		Name:        Name,
		Description: "Test fixture: reports progress around a wait for SIGUSR1. Local stack only.",
		ReadOnly:    true,
		// A client that declares the tasks extension gets a task (run as
		// an asynchronous invoke); any other a synchronous call.
		TaskSupport: adapter.TaskOptional,
		Handler: func(ctx context.Context, call *adapter.Call, in Input) (Output, error) {
			if in.Quiet {
				return Output{}, nil
			}
			sig := make(chan os.Signal, 1)
			signal.Notify(sig, syscall.SIGUSR1)
			defer signal.Stop(sig)
			call.Progress(1, 2, PIDPrefix+strconv.Itoa(os.Getpid()))
			if in.Wait {
				select {
				case <-sig:
				case <-ctx.Done():
					return Output{}, ctx.Err()
				}
			}
			call.Progress(2, 2, "released")
			return Output{Released: in.Wait}, nil
		},
	})
}
