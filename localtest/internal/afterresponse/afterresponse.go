// Package afterresponse is a destructive tool for the local stack's tests of
// the after-response audit (docs/decisions/0023-audit-after-response.md):
// it answers at once, and on request its process exits shortly after
// answering, while the call's final audit row is still queued. It runs only
// locally, as an ExtraFunctions fixture (function/ is its Lambda main).
package afterresponse

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/mcpfn/mcpfn/adapter"
)

// Name is the tool's name.
const Name = "after_response"

// Modes of Input.Mode.
const (
	ModeOK = "ok"
	// ModeExitAfter answers, then the process exits 300 ms later: after
	// the runtime has posted the answer, before a slow table has taken the
	// final row.
	ModeExitAfter = "exit-after"
	// ModeTeardown registers an environment teardown that prints
	// TeardownLine, run when the process receives SIGTERM.
	ModeTeardown = "teardown"
)

// TeardownLine is what the environment teardown of ModeTeardown prints.
const TeardownLine = "afterresponse: environment teardown ran"

// ExitStatus is the status the process exits with in ModeExitAfter.
const ExitStatus = 7

// Input selects the mode.
type Input struct {
	Mode string `json:"mode" jsonschema:"ok, exit-after or teardown"`
	// ID is recorded as the call's entityId dimension, so a test finds the
	// call's audit rows by entity.
	ID string `json:"id"`
}

// Output echoes the id.
type Output struct {
	Answered string `json:"answered"`
}

// Tool returns the tool definition.
func Tool() *adapter.Tool {
	return adapter.MustDefine(adapter.ToolDef[Input, Output]{
		Name:        Name,
		Description: "Test fixture: answers, and on request exits right after answering. Local stack only.",
		Destructive: true,
		Idempotent:  true,
		Handler: func(ctx context.Context, call *adapter.Call, in Input) (Output, error) {
			call.SetDimension("entityId", in.ID)
			switch in.Mode {
			case ModeExitAfter:
				time.AfterFunc(300*time.Millisecond, func() { os.Exit(ExitStatus) })
			case ModeTeardown:
				if err := call.OnTeardown(adapter.TeardownEnvironment, func() { fmt.Fprintln(os.Stderr, TeardownLine) }); err != nil {
					return Output{}, err
				}
			}
			return Output{Answered: in.ID}, nil
		},
	})
}
