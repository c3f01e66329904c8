// Command agentcore_interceptor is the AgentCore Gateway REQUEST interceptor:
// it verifies each tools/call's bearer JWT, refuses callers without the
// tool's scopes and gives every other call a call token its function
// verifies (package agentcore).
package main

import (
	"github.com/mcpfn/mcpfn/agentcore"
	"github.com/mcpfn/mcpfn/handlers"
)

func main() {
	agentcore.Start(handlers.Catalog())
}
