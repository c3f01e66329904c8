// Command broadcast_delete is the Lambda function of the broadcast_delete tool:
// handlers.Delete bound to a store over the broadcasts table and the
// attachments bucket its environment names (a broadcast's attachment goes
// with it), served by the adapter.
package main

import (
	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/handlers"
)

func main() { adapter.Serve(handlers.Delete, handlers.AttachmentStoreFromEnv) }
