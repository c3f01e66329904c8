// Command mcpfn-local runs the whole mcpfn application on this machine, in
// the foreground, until Ctrl-C or SIGTERM: every tool function under the
// Lambda Runtime Interface Emulator, the Lambda Invoke API, DynamoDB Local,
// the X-Ray stand-in, a JWT issuer and the gateway. `make local` runs it; see
// docs/local.md. Once everything is up it prints
//
//	READY mcp=http://127.0.0.1:8080/mcp token=<jwt> issuer=<issuer url>
//
// Addresses come from MCPFN_LOCAL_MCP_ADDR, MCPFN_LOCAL_INVOKE_ADDR,
// MCPFN_LOCAL_DYNAMODB_ADDR, MCPFN_LOCAL_XRAY_ADDR, MCPFN_LOCAL_DIR and
// MCPFN_DYNAMODB_ENDPOINT.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/mcpfn/mcpfn/localtest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := localtest.ConfigFromEnv()
	cfg.Stdout = os.Stderr // progress on stderr, so stdout carries only READY
	st, err := localtest.Start(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpfn-local:", err)
		os.Exit(1)
	}
	fmt.Println(st.ReadyLine())
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "mcpfn-local: stopping")
	if err := st.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "mcpfn-local:", err)
		os.Exit(1)
	}
}
