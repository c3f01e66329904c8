// Command function is the Lambda function of the s3probe fixture tool.
package main

import (
	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/localtest/internal/s3probe"
)

func main() { adapter.Serve(s3probe.Declared, s3probe.New) }
