package main

import (
	"context"
	"fmt"
	"io"
)

func runInit(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "mcpfn init: not yet")
	return 1
}
