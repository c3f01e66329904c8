// Command mcpfn-audit reads the mcpfn audit table: a trace's rows as a tree,
// the calls on an entity or by a caller, and the replay of fallback rows
// from logs into the table. See docs/audit.md.
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/mcpfn/mcpfn/audit"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := audit.RunCLI(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, nil)
	stop()
	os.Exit(code)
}
