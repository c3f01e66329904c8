// Command mcpfn-audit is `mcpfn audit` under its earlier name: it reads the
// mcpfn audit table (a trace's rows as a tree, the calls on an entity or by a
// caller, the replay of fallback rows, and serve, the audit viewer). See
// docs/audit.md and docs/viewer.md.
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/mcpfn/mcpfn/internal/auditcli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := auditcli.Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
