package main

import (
	"context"
	"io"

	"github.com/mcpfn/mcpfn/internal/auditcli"
)

// runAudit is `mcpfn audit …` (docs/audit.md).
func runAudit(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return auditcli.Run(ctx, args, stdin, stdout, stderr)
}
