// Command mcpfn-interceptor is the AgentCoreInterceptorFunction of every
// mcpfn project (DeployAgentCoreGateway=true): the AgentCore Gateway REQUEST
// interceptor that verifies each tools/call's bearer JWT, refuses callers
// without the tool's scopes — read from the catalog packaged beside it
// (mcpfn-tools.json) — and gives every other call a call token its function
// verifies (package agentcore).
package main

import (
	"log"

	"github.com/mcpfn/mcpfn/agentcore"
	"github.com/mcpfn/mcpfn/catalog"
)

func main() {
	tools, err := catalog.ToolsFromEnv()
	if err != nil {
		log.Fatal(err)
	}
	agentcore.Start(tools)
}
