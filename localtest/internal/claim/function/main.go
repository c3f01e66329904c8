// Command function is the claim fixture's Lambda function.
package main

import (
	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/localtest/internal/claim"
)

func main() { adapter.Start(claim.Tool()) }
