package audit

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
)

const cliUsage = `usage: mcpfn-audit [flags] <command> [args]

commands:
  trace <traceId>          all rows of a trace, as a tree
  entity <name> <value>    calls on an entity (a dimension), newest first
  caller <subject>         calls by one verified principal, newest first: the
                           subject with -auth, -issuer and -tenant (all part
                           of the principal; empty ones must be empty on the row)
  callerkey <key>          calls by a caller key as listings print it
                           (<authMethod>#<issuer>#<tenant>#<subject>)
  replay [file|-]          write fallback rows found in log text to the table

flags:
`

// RunCLI is the mcpfn-audit command: main passes os.Args[1:] and the
// standard streams and exits with the returned code. client may be nil, in
// which case one is built from the default AWS configuration (which honours
// AWS_ENDPOINT_URL_DYNAMODB). Kept here, not in main, so it is testable.
func RunCLI(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, client DynamoAPI) int {
	return RunCLIWith(ctx, args, stdin, stdout, stderr, client, nil)
}

// Command is a subcommand added to [RunCLIWith] by a package audit cannot
// import (the viewer imports audit). Run gets the auditor the global flags
// configured and the arguments after the command's name.
type Command struct {
	Usage string // one line for the usage text, e.g. "serve [flags]   the web viewer"
	Run   func(ctx context.Context, a *Auditor, args []string, stdout, stderr io.Writer) int
}

// RunCLIWith is [RunCLI] with more commands, by name.
func RunCLIWith(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, client DynamoAPI, extra map[string]Command) int {
	fs := flag.NewFlagSet("mcpfn-audit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	table := fs.String("table", os.Getenv(EnvTable), "audit table name (env "+EnvTable+")")
	asJSON := fs.Bool("json", false, "print rows as JSON lines instead of text")
	limit := fs.Int("limit", 100, "entity/caller: at most this many rows (0: all)")
	since := fs.Duration("since", 0, "entity/caller: only rows started within this long ago (0: all)")
	authMethod := fs.String("auth", "jwt", "caller: the principal's auth method (jwt, iam)")
	issuer := fs.String("issuer", "", "caller: the principal's issuer (a JWT's iss; aws:iam for IAM)")
	tenant := fs.String("tenant", "", "caller: the principal's tenant (an IAM caller's account id)")
	fs.Usage = func() {
		usage := cliUsage
		for _, name := range slices.Sorted(maps.Keys(extra)) {
			usage = strings.Replace(usage, "\nflags:", "  "+extra[name].Usage+"\n\nflags:", 1)
		}
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
		fmt.Fprintln(stderr, "mcpfn-audit: no table: pass -table or set "+EnvTable)
		return 2
	}
	if client == nil {
		awsCfg, err := config.LoadDefaultConfig(ctx)
		if err != nil {
			fmt.Fprintln(stderr, "mcpfn-audit:", err)
			return 1
		}
		client = NewDynamoClient(awsCfg)
	}
	// Replay writes to stderr what it could not write, never to stdout as
	// a new fallback line: a failed replay must not feed the next one.
	a := New(Config{Table: *table, Client: client, Fallback: stderr})
	opts := QueryOptions{Limit: *limit, Newest: true}
	if *since > 0 {
		opts.Since = time.Now().Add(-*since)
	}
	show := func(rows []Row, err error) int {
		if err != nil {
			fmt.Fprintln(stderr, "mcpfn-audit:", err)
			return 1
		}
		if *asJSON {
			return writeJSONRows(stdout, stderr, rows)
		}
		if err := WriteRows(stdout, rows); err != nil {
			return 1
		}
		return 0
	}
	cmd, rest := rest[0], rest[1:]
	if c, ok := extra[cmd]; ok {
		return c.Run(ctx, a, rest, stdout, stderr)
	}
	switch {
	case cmd == "trace" && len(rest) == 1:
		rows, err := a.TraceRows(ctx, rest[0])
		if err != nil || *asJSON {
			return show(rows, err)
		}
		if err := WriteTraceTree(stdout, rest[0], rows); err != nil {
			return 1
		}
		return 0
	case cmd == "entity" && len(rest) == 2:
		return show(a.EntityRows(ctx, rest[0], rest[1], opts))
	case cmd == "caller" && len(rest) == 1:
		return show(a.CallerRows(ctx, Caller{AuthMethod: *authMethod, Issuer: *issuer, Tenant: *tenant, Subject: rest[0]}, opts))
	case cmd == "callerkey" && len(rest) == 1:
		return show(a.CallerKeyRows(ctx, rest[0], opts))
	case cmd == "replay" && len(rest) <= 1:
		in := stdin
		if len(rest) == 1 && rest[0] != "-" {
			f, err := os.Open(rest[0])
			if err != nil {
				fmt.Fprintln(stderr, "mcpfn-audit:", err)
				return 1
			}
			defer f.Close()
			in = f
		}
		st, err := Replay(ctx, in, a)
		fmt.Fprintf(stdout, "lines=%d found=%d written=%d present=%d failed=%d malformed=%d\n",
			st.Lines, st.Found, st.Written, st.Present, st.Failed, st.Malformed)
		if err != nil {
			fmt.Fprintln(stderr, "mcpfn-audit:", err)
			return 1
		}
		return 0
	}
	fs.Usage()
	return 2
}

func writeJSONRows(stdout, stderr io.Writer, rows []Row) int {
	enc := json.NewEncoder(stdout)
	for i := range rows {
		if err := enc.Encode(&rows[i]); err != nil {
			fmt.Fprintln(stderr, "mcpfn-audit:", err)
			return 1
		}
	}
	return 0
}
