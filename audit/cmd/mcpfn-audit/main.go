// Command mcpfn-audit reads the mcpfn audit table: a trace's rows as a tree,
// the calls on an entity or by a caller, and the replay of fallback rows
// from logs into the table, and `serve`, the audit viewer (a read-only web
// page). See docs/audit.md and docs/viewer.md.
//
// The whole command is [run], which main calls with the process's arguments
// and streams, and which the tests call the same way.
package main

import (
	"context"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
