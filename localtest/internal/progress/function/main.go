// Command function is the progress fixture's Lambda function.
package main

import (
	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/localtest/internal/progress"
)

func main() { adapter.Start(progress.Tool()) }
