// Package progress is a tool that reports progress around a wait, for the
// local stack's tests of streamed invokes: its first progress message
// carries the process id, and, asked to wait, the handler blocks until the
// process receives SIGUSR1 — so a test proves that the first frame reached
// it while the handler was still running. It runs only locally, as an
// ExtraFunctions fixture (function/ is its Lambda main).
package progress

import (
	"context"
	"net/http"
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
	// ID is recorded as the call's entityId dimension, so a test finds the
	// call's audit rows by entity.
	ID string `json:"id,omitempty"`
	// Hold, a URL, is GET between the two reports: the handler goes on
	// when the test answers it, so a test decides when the call ends
	// (after the gateway gave up on it, say).
	Hold string `json:"hold,omitempty"`
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
			if in.ID != "" {
				call.SetDimension("entityId", in.ID)
			}
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
			if in.Hold != "" {
				if err := hold(ctx, in.Hold); err != nil {
					return Output{}, err
				}
			}
			call.Progress(2, 2, "released")
			return Output{Released: in.Wait}, nil
		},
	})
}

// hold GETs url and returns once it is answered.
func hold(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}
