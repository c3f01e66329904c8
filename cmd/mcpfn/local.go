package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcpfn/mcpfn/internal/project"
	"github.com/mcpfn/mcpfn/localtest"
)

// runLocal is `mcpfn local`: the project on this machine, in the
// foreground, until Ctrl-C or SIGTERM — every tool function under the Lambda
// Runtime Interface Emulator, the Lambda Invoke API, DynamoDB Local with the
// template's tables, the X-Ray and OTLP stand-ins, a Secrets Manager stand-in
// with the call keys, a JWT issuer, the gateway, the AgentCore Gateway
// stand-in and the audit viewer (docs/local.md). Once up it prints
//
//	READY mcp=http://127.0.0.1:8080/mcp token=<jwt>
//	AGENTCORE mcp=http://127.0.0.1:8082/mcp
//	VIEWER url=http://127.0.0.1:8083/
//
// on stdout; progress goes to stderr. Addresses come from the MCPFN_LOCAL_*
// variables (localtest.ConfigFromEnv).
func runLocal(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpfn local", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if fs.Parse(args) != nil || fs.NArg() != 0 {
		return 2
	}
	cfg := localtest.ConfigFromEnv()
	p, err := project.Find(".")
	if err != nil {
		return fail(stderr, "local", err)
	}
	cfg.Root = p.Root
	if cfg.Dir == "" {
		cfg.Dir = filepath.Join(p.Root, localtest.DefaultDir)
	}
	cfg.Stdout = stderr // progress on stderr: stdout carries only READY, AGENTCORE, VIEWER
	st, err := localtest.Start(ctx, cfg)
	if err != nil {
		return fail(stderr, "local", err)
	}
	fmt.Fprintln(stdout, st.ReadyLine())
	if u := st.AgentCoreURL(); u != "" {
		// Beside READY, its format unchanged: the AgentCore Gateway
		// stand-in (same token, tools named <target>___<tool>).
		fmt.Fprintln(stdout, "AGENTCORE mcp="+u)
	}
	if u := st.ViewerURL(); u != "" {
		fmt.Fprintln(stdout, "VIEWER url="+u)
	}
	<-ctx.Done()
	fmt.Fprintln(stderr, "mcpfn local: stopping")
	if err := st.Close(); err != nil {
		return fail(stderr, "local", err)
	}
	return 0
}

// localDir is the running stack's directory (MCPFN_LOCAL_DIR, default
// .local at the project's root), where it leaves its keys.
func localDir() (string, error) {
	if d := localtest.ConfigFromEnv().Dir; d != "" {
		return d, nil
	}
	p, err := project.Find(".")
	if err != nil {
		return "", err
	}
	return filepath.Join(p.Root, localtest.DefaultDir), nil
}

// runToken is `mcpfn token -sub NAME [-scopes "a b"]`: a bearer token for
// another caller, from a running stack's issuer.
func runToken(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpfn token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sub := fs.String("sub", localtest.DemoSubject, "the token's subject")
	scopes := fs.String("scopes", "", "space-separated scopes")
	if fs.Parse(args) != nil || fs.NArg() != 0 {
		return 2
	}
	dir, err := localDir()
	if err != nil {
		return fail(stderr, "token", err)
	}
	keys, err := localtest.LoadKeys(dir)
	if err != nil {
		return fail(stderr, "token", err)
	}
	tok, err := keys.MintToken(*sub, strings.Fields(*scopes))
	if err != nil {
		return fail(stderr, "token", err)
	}
	fmt.Fprintln(stdout, tok)
	return 0
}

// runSignEvents is `mcpfn sign-events [-out DIR] [-ttl 15m]`: the events/
// files signed with a running stack's keys, for `sam local invoke -e`.
func runSignEvents(args []string, stdout, stderr io.Writer) int {
	dir, err := localDir()
	if err != nil {
		return fail(stderr, "sign-events", err)
	}
	fs := flag.NewFlagSet("mcpfn sign-events", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", filepath.Join(dir, "events"), "where the signed events go")
	ttl := fs.Duration("ttl", 15*time.Minute, "how long the signed events stay valid")
	from := fs.String("events", eventsDir, "the unsigned events")
	if fs.Parse(args) != nil || fs.NArg() != 0 {
		return 2
	}
	keys, err := localtest.LoadKeys(dir)
	if err != nil {
		return fail(stderr, "sign-events", err)
	}
	written, err := keys.SignEvents(*from, *out, *ttl)
	if err != nil {
		return fail(stderr, "sign-events", err)
	}
	for _, p := range written {
		fmt.Fprintln(stdout, p)
	}
	return 0
}
