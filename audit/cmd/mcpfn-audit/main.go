// Command mcpfn-audit reads the mcpfn audit table: a trace's rows as a tree,
// the calls on an entity or by a caller, and the replay of fallback rows
// from logs into the table, and `serve`, the audit viewer (a read-only web
// page). See docs/audit.md and docs/viewer.md.
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/audit/viewer"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := audit.RunCLIWith(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, nil,
		map[string]audit.Command{"serve": viewer.ServeCommand})
	stop()
	os.Exit(code)
}
