// Command function is the Lambda function of the faulty fixture tool.
package main

import (
	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/localtest/internal/faulty"
)

func main() { adapter.Start(faulty.Tool()) }
