// Command gateway is the mcpfn MCP endpoint: tools/list from the handlers
// catalog, every tools/call forwarded to the tool's own Lambda function. On
// Lambda it serves Function URL / HTTP API events; elsewhere it listens on
// MCPFN_LISTEN_ADDR (default 127.0.0.1:8080). Configuration: docs/gateway.md.
package main

import (
	"log"

	"github.com/mcpfn/mcpfn/gateway"
	"github.com/mcpfn/mcpfn/handlers"
)

func main() {
	cfg, err := gateway.ConfigFromEnv()
	if err != nil {
		log.Fatal(err)
	}
	cfg.Tools = handlers.Catalog()
	g, err := gateway.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	if gateway.IsLambda() {
		gateway.StartLambda(g)
	}
	if err := g.ListenAndServe(""); err != nil {
		log.Fatal(err)
	}
}
