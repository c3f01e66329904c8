// Command mcpfn-local runs the whole mcpfn application on this machine, in
// the foreground, until Ctrl-C or SIGTERM: every tool function under the
// Lambda Runtime Interface Emulator, the Lambda Invoke API, DynamoDB Local,
// the X-Ray stand-in, a Secrets Manager stand-in holding the call keys, a JWT
// issuer and the gateway. `make local` runs it; see docs/local.md. Once
// everything is up it prints
//
//	READY mcp=http://127.0.0.1:8080/mcp token=<jwt>
//	AGENTCORE mcp=http://127.0.0.1:8082/mcp
//	VIEWER url=http://127.0.0.1:8083/
//
// the second line being the AgentCore Gateway stand-in (interceptor and
// Lambda targets as template.yaml declares them), the third the audit viewer
// (docs/viewer.md) over the audit table and .local/xray.jsonl.
//
// Addresses come from MCPFN_LOCAL_MCP_ADDR, MCPFN_LOCAL_AGENTCORE_ADDR,
// MCPFN_LOCAL_VIEWER_ADDR, MCPFN_LOCAL_INVOKE_ADDR,
// MCPFN_LOCAL_DYNAMODB_ADDR, MCPFN_LOCAL_XRAY_ADDR, MCPFN_LOCAL_SECRETS_ADDR,
// MCPFN_LOCAL_ISSUER_ADDR,
// MCPFN_LOCAL_DIR and MCPFN_DYNAMODB_ENDPOINT.
//
// Beside a running stack (same MCPFN_LOCAL_DIR), two more commands use its
// keys:
//
//	mcpfn-local token -sub NAME [-scopes "a b"]   a bearer token for another caller
//	mcpfn-local sign-events [-out DIR] [-ttl 15m]  freshly signed sam local events
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/mcpfn/mcpfn/localtest"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	cfg := localtest.ConfigFromEnv()
	dir := cfg.Dir
	if dir == "" {
		dir = localtest.DefaultDir
	}
	if len(args) == 0 {
		return serve(cfg, stdout, stderr)
	}
	switch args[0] {
	case "token":
		fs := flag.NewFlagSet("token", flag.ContinueOnError)
		fs.SetOutput(stderr)
		sub := fs.String("sub", localtest.DemoSubject, "the token's subject")
		scopes := fs.String("scopes", "", "space-separated scopes")
		if fs.Parse(args[1:]) != nil {
			return 2
		}
		keys, err := localtest.LoadKeys(dir)
		if err != nil {
			fmt.Fprintln(stderr, "mcpfn-local:", err)
			return 1
		}
		tok, err := keys.MintToken(*sub, strings.Fields(*scopes))
		if err != nil {
			fmt.Fprintln(stderr, "mcpfn-local:", err)
			return 1
		}
		fmt.Fprintln(stdout, tok)
		return 0
	case "sign-events":
		fs := flag.NewFlagSet("sign-events", flag.ContinueOnError)
		fs.SetOutput(stderr)
		out := fs.String("out", filepath.Join(dir, "events"), "where the signed events go")
		ttl := fs.Duration("ttl", 15*time.Minute, "how long the signed events stay valid")
		from := fs.String("events", filepath.Join("localtest", "events"), "the unsigned events")
		if fs.Parse(args[1:]) != nil {
			return 2
		}
		keys, err := localtest.LoadKeys(dir)
		if err != nil {
			fmt.Fprintln(stderr, "mcpfn-local:", err)
			return 1
		}
		written, err := keys.SignEvents(*from, *out, *ttl)
		if err != nil {
			fmt.Fprintln(stderr, "mcpfn-local:", err)
			return 1
		}
		for _, p := range written {
			fmt.Fprintln(stdout, p)
		}
		return 0
	}
	fmt.Fprintf(stderr, "mcpfn-local: unknown command %q (want none, token or sign-events)\n", args[0])
	return 2
}

func serve(cfg localtest.Config, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg.Stdout = stderr // progress on stderr, so stdout carries only READY (AGENTCORE, VIEWER)
	st, err := localtest.Start(ctx, cfg)
	if err != nil {
		fmt.Fprintln(stderr, "mcpfn-local:", err)
		return 1
	}
	fmt.Fprintln(stdout, st.ReadyLine())
	if u := st.AgentCoreURL(); u != "" {
		// Beside READY, its format unchanged: the AgentCore Gateway
		// stand-in (same token, tools named <target>___<tool>).
		fmt.Fprintln(stdout, "AGENTCORE mcp="+u)
	}
	if u := st.ViewerURL(); u != "" {
		// The audit viewer: calls, traces and rows, in a browser.
		fmt.Fprintln(stdout, "VIEWER url="+u)
	}
	<-ctx.Done()
	fmt.Fprintln(stderr, "mcpfn-local: stopping")
	if err := st.Close(); err != nil {
		fmt.Fprintln(stderr, "mcpfn-local:", err)
		return 1
	}
	return 0
}
