// Command broadcast_attach is the Lambda function of the broadcast_attach tool:
// handlers.Attach bound to a store over the broadcasts table and the
// attachments bucket its environment names, served by the adapter.
package main

import (
	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/handlers"
)

func main() { adapter.Serve(handlers.Attach, handlers.AttachmentStoreFromEnv) }
