// Command function is the Lambda function of the afterresponse fixture tool.
package main

import (
	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/localtest/internal/afterresponse"
)

func main() { adapter.Start(afterresponse.Tool()) }
