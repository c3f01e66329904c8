// Command mcpfn is the one command a project that uses mcpfn runs, from its
// own module (`go tool mcpfn …` once `mcpfn init` or `go get -tool
// github.com/mcpfn/mcpfn/cmd/mcpfn` made it a tool of the module):
//
//	mcpfn init <module path>     scaffold a project in an empty directory
//	mcpfn template [-check]      write template.yaml's mcpfn regions and mcpfn-tools.json
//	                             from the tools' declarations (-check: fail if stale, or
//	                             on CloudFormation validator errors; -no-validate: not those)
//	mcpfn build <LogicalId>      build one function for Lambda (sam build's glue)
//	mcpfn local                  the whole project on this machine (READY line)
//	mcpfn token -sub NAME        a bearer token from a running local stack's issuer
//	mcpfn sign-events            the events/ files signed with a running stack's keys
//	mcpfn audit …                read the audit table (trace, entity, caller, replay, serve)
//	mcpfn agentcore-schemas      AgentCore Gateway tool schemas from the catalog
//	mcpfn agentcore-policies     Cedar policies for an AgentCore policy engine
//	mcpfn version                mcpfn's version
//
// Every command works from the project's module: it finds go.mod, the
// template, the catalog and functions/<tool>/main.go (package
// internal/project). Errors name the mcpfn command that fixes them.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `usage: mcpfn <command> [flags]

commands:
  init <module path>     scaffold a project (go.mod, one tool, its test and function,
                         template.yaml, samconfig.toml, the build glue) in an empty directory
  template [-check]      write template.yaml's mcpfn regions and mcpfn-tools.json from the
                         tools' declarations; -check fails, with a diff, when they are stale,
                         and on the errors @aws/cloudformation-validate finds in template.yaml
                         (run when Node.js is on PATH, installed on first use; -no-validate
                         skips it, e.g. offline)
  build [-o DIR] ID      build the function with logical id ID for Lambda (sam build runs
                         it through the Makefile's build-% rule); -all builds every one
  local                  run the project on this machine: functions under the Lambda
                         emulator, DynamoDB Local, the gateway (prints READY mcp=… token=…)
  token -sub NAME        a bearer token from the running local stack's issuer
  sign-events            sign the events/ files with the running local stack's keys
  audit …                read the audit table (mcpfn audit -h)
  agentcore-schemas      write the AgentCore Gateway tool schemas from the catalog
  agentcore-policies     write Cedar policies (one permit per tool, by JWT scope)
  version                print mcpfn's version
`

// run is the whole command: main passes the arguments and standard streams,
// and the tests call it the same way.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "init":
		return runInit(ctx, rest, stdout, stderr)
	case "template":
		return runTemplate(ctx, rest, stdout, stderr)
	case "build":
		return runBuild(ctx, rest, stdout, stderr)
	case "local":
		return runLocal(ctx, rest, stdout, stderr)
	case "token":
		return runToken(rest, stdout, stderr)
	case "sign-events":
		return runSignEvents(rest, stdout, stderr)
	case "audit":
		return runAudit(ctx, rest, stdin, stdout, stderr)
	case "agentcore-schemas":
		return runAgentCoreSchemas(rest, stdout, stderr)
	case "agentcore-policies":
		return runAgentCorePolicies(rest, stdout, stderr)
	case "version", "-version", "--version":
		return runVersion(stdout)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "mcpfn: unknown command %q\n\n%s", cmd, usage)
	return 2
}

// fail prints err for command cmd and returns exit code 1.
func fail(stderr io.Writer, cmd string, err error) int {
	fmt.Fprintf(stderr, "mcpfn %s: %v\n", cmd, err)
	return 1
}
