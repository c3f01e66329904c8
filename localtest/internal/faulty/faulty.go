// Package faulty is a tool that fails on request, for the local stack's
// end-to-end tests of the paths a healthy tool never takes: its process
// exiting mid-invoke, running past the function's timeout, or being slow
// enough to exhaust a pool. It runs only locally, as an ExtraFunctions
// fixture (function/ is its Lambda main).
//
// It is destructive (so the audit writes a pending row before the handler
// runs: a crash or a timeout still leaves evidence) and idempotent (so the
// gateway may still call such a failure retryable).
package faulty

import (
	"context"
	"os"
	"time"

	"github.com/mcpfn/mcpfn/adapter"
)

// Name is the tool's name.
const Name = "faulty"

// Modes of Input.Mode.
const (
	ModeOK    = "ok"    // answer at once
	ModeCrash = "crash" // the process exits mid-invoke (os.Exit)
	ModeHang  = "hang"  // ignore the deadline: the function times out
	ModeSlow  = "slow"  // sleep SleepMs, honouring cancellation
)

// Input selects the failure.
type Input struct {
	Mode string `json:"mode" jsonschema:"ok, crash, hang or slow"`
	// ID is recorded as the call's entityId dimension, so a test finds the
	// call's audit rows by entity.
	ID      string `json:"id,omitempty"`
	SleepMs int    `json:"sleepMs,omitempty"`
}

// Output echoes the mode.
type Output struct {
	Mode string `json:"mode"`
}

// Tool returns the tool definition; the gateway's catalog and the function
// share it, so its schema is the same on both sides.
func Tool() *adapter.Tool {
	return adapter.MustDefine(adapter.ToolDef[Input, Output]{
		Name:        Name,
		Description: "Test fixture: fails on request (crash, hang, slow). Local stack only.",
		Destructive: true,
		Idempotent:  true,
		Handler: func(ctx context.Context, call *adapter.Call, in Input) (Output, error) {
			if in.ID != "" {
				call.SetDimension("entityId", in.ID)
			}
			switch in.Mode {
			case ModeCrash:
				os.Exit(3)
			case ModeHang:
				// Deliberately deaf to ctx: only Lambda's timeout ends it.
				time.Sleep(time.Hour)
			case ModeSlow:
				select {
				case <-time.After(time.Duration(in.SleepMs) * time.Millisecond):
				case <-ctx.Done():
					return Output{}, ctx.Err()
				}
			}
			return Output{Mode: in.Mode}, nil
		},
	})
}
