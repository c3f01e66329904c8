package auditcli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/mcpfn/mcpfn/audit"
)

const usage = `usage: mcpfn audit [flags] <command> [args]

commands:
  trace <traceId>          all calls of a trace, as a tree
  entity <name> <value>    calls on an entity (a dimension), newest first
  caller <subject>         calls by one verified principal, newest first: the
                           subject with -auth, -issuer and -tenant (all part
                           of the principal; empty ones must be empty on the row)
  callerkey <key>          calls by a caller key as listings print it
                           (<authMethod>#<issuer>#<tenant>#<subject>)
  replay -writer W [file|-]
                           write the fallback rows of W's log to the table:
                           W is the tool whose function's log it is, or
                           gateway for the gateway's; rows of any other
                           writer are refused (foreign=), never written
  serve [-addr A] [-xray-file F]
                           the audit viewer, a read-only web page (docs/viewer.md)
  verify -tool T <callId>  check the objects a call's rows name (stored
                           arguments, result, the result's blobs) against the
                           size and SHA-256 each row recorded; exit 1 on any
                           mismatch or missing object

Each line is one call: its outcome row (the function's final row, else the
gateway's), and, where the gateway wrote a row too, outcome-row= and what
the other row says. -json prints {callId, outcomeBy, function, gateway}.

flags:
`

// Run is the audit command (`mcpfn audit`, `mcpfn-audit`): main passes os.Args[1:] and the standard
// streams and exits with the returned code. The table is reached through the
// default AWS configuration, which honours AWS_ENDPOINT_URL_DYNAMODB (the
// local stack's DynamoDB Local, and the tests').
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpfn audit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	table := fs.String("table", os.Getenv(audit.EnvTable), "audit table name (env "+audit.EnvTable+")")
	asJSON := fs.Bool("json", false, "print rows as JSON lines instead of text")
	limit := fs.Int("limit", 100, "entity/caller: at most this many rows (0: all)")
	since := fs.Duration("since", 0, "entity/caller: only rows started within this long ago (0: all)")
	authMethod := fs.String("auth", "jwt", "caller: the principal's auth method (jwt, iam)")
	issuer := fs.String("issuer", "", "caller: the principal's issuer (a JWT's iss; aws:iam for IAM)")
	tenant := fs.String("tenant", "", "caller: the principal's tenant (an IAM caller's account id)")
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	rest := fs.Args()
	if len(rest) == 0 {
		fs.Usage()
		return 2
	}
	if *table == "" {
		fmt.Fprintln(stderr, "mcpfn audit: no table: pass -table or set "+audit.EnvTable)
		return 2
	}
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "mcpfn audit:", err)
		return 1
	}
	// Replay writes to stderr what it could not write, never to stdout as
	// a new fallback line: a failed replay must not feed the next one.
	a := audit.New(audit.Config{Table: *table, Client: audit.NewDynamoClient(awsCfg), Fallback: stderr})
	opts := audit.QueryOptions{Limit: *limit, Newest: true}
	if *since > 0 {
		opts.Since = time.Now().Add(-*since)
	}
	// Every listing shows calls: the rows of a call id joined, the other
	// writer's row read by key when the listing lacks it (an entity's rows
	// are the functions'), the outcome row saying which it is.
	calls := func(rows []audit.Row, err error) ([]audit.Call, bool) {
		if err == nil {
			cs := audit.JoinCalls(rows)
			if err = a.CompleteCalls(ctx, cs); err == nil {
				return cs, true
			}
		}
		fmt.Fprintln(stderr, "mcpfn audit:", err)
		return nil, false
	}
	show := func(rows []audit.Row, err error) int {
		cs, ok := calls(rows, err)
		if !ok {
			return 1
		}
		if *asJSON {
			return writeJSONCalls(stdout, stderr, cs)
		}
		if err := audit.WriteCalls(stdout, cs); err != nil {
			return 1
		}
		return 0
	}
	cmd, rest := rest[0], rest[1:]
	switch {
	case cmd == "trace" && len(rest) == 1:
		rows, err := a.TraceRows(ctx, rest[0])
		if err != nil || *asJSON {
			return show(rows, err)
		}
		cs, ok := calls(rows, nil)
		if !ok {
			return 1
		}
		if err := audit.WriteCallTree(stdout, rest[0], cs); err != nil {
			return 1
		}
		return 0
	case cmd == "entity" && len(rest) == 2:
		return show(a.EntityRows(ctx, rest[0], rest[1], opts))
	case cmd == "caller" && len(rest) == 1:
		return show(a.CallerRows(ctx, audit.Caller{AuthMethod: *authMethod, Issuer: *issuer, Tenant: *tenant, Subject: rest[0]}, opts))
	case cmd == "callerkey" && len(rest) == 1:
		return show(a.CallerKeyRows(ctx, rest[0], opts))
	case cmd == "replay":
		return replay(ctx, a, rest, stdin, stdout, stderr)
	case cmd == "serve":
		return serve(ctx, awsCfg, a, rest, stdout, stderr)
	case cmd == "verify":
		return verify(ctx, awsCfg, a, rest, stdout, stderr)
	}
	fs.Usage()
	return 2
}

// writeJSONCalls prints one JSON object per call: {callId, outcomeBy,
// function, gateway}, the outcome being the row outcomeBy names.
func writeJSONCalls(stdout, stderr io.Writer, calls []audit.Call) int {
	enc := json.NewEncoder(stdout)
	for i := range calls {
		if err := enc.Encode(&calls[i]); err != nil {
			fmt.Fprintln(stderr, "mcpfn audit:", err)
			return 1
		}
	}
	return 0
}
