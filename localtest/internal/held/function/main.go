// Command function is the held fixture's Lambda function.
package main

import (
	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/localtest/internal/held"
)

func main() { adapter.Start(held.Tool()) }
