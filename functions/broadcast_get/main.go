// Command broadcast_get is the Lambda function of the broadcast_get tool:
// the handler from package handlers, bound to the broadcasts table named by
// MCPFN_BROADCASTS_TABLE, served by the adapter (audited when
// MCPFN_AUDIT_TABLE is set).
package main

import (
	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/handlers"
)

func main() {
	adapter.Start(handlers.BroadcastGet(handlers.MustStoreFromEnv()))
}
