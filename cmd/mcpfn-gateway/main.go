// Command mcpfn-gateway is the GatewayFunction of every mcpfn project: the
// MCP endpoint, tools/list from the catalog packaged beside it
// (mcpfn-tools.json, written by `mcpfn template`), every tools/call
// forwarded to the tool's own Lambda function. `mcpfn build GatewayFunction`
// builds it with the project's catalog. On Lambda it serves a
// RESPONSE_STREAM Function URL; under `mcpfn local` it serves the socket the
// local stack hands it (internal/localgateway); elsewhere it listens on
// MCPFN_LISTEN_ADDR (default 127.0.0.1:8080). Configuration: docs/gateway.md.
// Until its first tools/call is answered it collects garbage at GOGC=400
// unless GOGC or GOMEMLIMIT is set (internal/startgc).
package main

import (
	"log"

	"github.com/mcpfn/mcpfn/catalog"
	"github.com/mcpfn/mcpfn/gateway"
	"github.com/mcpfn/mcpfn/internal/localgateway"
	"github.com/mcpfn/mcpfn/internal/startgc"
)

func main() {
	// The collector's first cycles wait for the first answer (internal/startgc).
	endStartGC := startgc.Begin()
	cfg, err := gateway.ConfigFromEnv()
	if err != nil {
		log.Fatal(err)
	}
	cfg.FirstAnswer = endStartGC
	local := localgateway.Requested()
	if local {
		cfg.Logger = localgateway.Logger()
	}
	if cfg.Tools, err = catalog.ToolsFromEnv(); err != nil {
		log.Fatal(err)
	}
	g, err := gateway.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	switch {
	case gateway.IsLambda():
		gateway.StartLambda(g)
	case local:
		err = localgateway.Serve(g)
		_ = g.Close()
	default:
		err = g.ListenAndServe("")
	}
	if err != nil {
		log.Fatal(err)
	}
}
