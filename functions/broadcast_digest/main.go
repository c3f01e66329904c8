// Command broadcast_digest is the Lambda function of the broadcast_digest
// tool: the long-running demo, which reads a channel page by page reporting
// progress and may run as a task (invoked asynchronously by the gateway).
// MCPFN_DIGEST_PAGE_DELAY slows it down for demos.
package main

import (
	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/handlers"
)

func main() {
	adapter.Start(handlers.BroadcastDigest(handlers.MustStoreFromEnv()))
}
