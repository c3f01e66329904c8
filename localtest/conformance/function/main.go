// Command function is the Lambda function of one conformance fixture tool,
// the one named by MCPFN_CONFORMANCE_TOOL. The local stack runs it once per
// fixture, each as its own function, so every fixture call takes the same
// gateway → Invoke → emulator → adapter path as the demo's tools.
package main

import (
	"fmt"
	"os"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/localtest/conformance"
)

func main() {
	tool, err := conformance.ByName(os.Getenv(conformance.EnvTool))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	adapter.Start(tool)
}
