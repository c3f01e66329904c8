package auditcli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/mcpfn/mcpfn/audit"
)

// noWriter is what replay says without -writer. A log never says whose it
// is (a function prints every line of its own log, so a line naming a
// writer proves nothing): the operator does, from the log group's name.
const noWriter = `mcpfn audit replay: whose log is it? Pass -writer:
  -writer <tool>    the log of the function that serves <tool>
                    (/aws/lambda/<function name>; mcpfn-tools.json maps each
                    tool to its function's logical id, the stack's resources
                    that id to the function's name)
  -writer gateway   the gateway's log
Replay writes only that writer's rows; a row of any other writer in the log
is refused and reported, never written (docs/audit.md, "Nothing lost").`

// replay is `mcpfn audit replay -writer W [file|-]`: the fallback rows of W's
// log, from a file or stdin, into the table.
func replay(ctx context.Context, a *audit.Auditor, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpfn audit replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	writer := fs.String("writer", "", "whose log it is: the tool whose function printed it, or "+audit.GatewayWriter+" (required)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: mcpfn audit [flags] replay -writer <tool|gateway> [file|-]")
		fs.PrintDefaults()
	}
	if fs.Parse(args) != nil {
		return 2
	}
	rest := fs.Args()
	if len(rest) > 1 {
		fs.Usage()
		return 2
	}
	if *writer == "" {
		fmt.Fprintln(stderr, noWriter)
		return 2
	}
	in := stdin
	if len(rest) == 1 && rest[0] != "-" {
		f, err := os.Open(rest[0])
		if err != nil {
			fmt.Fprintln(stderr, "mcpfn audit:", err)
			return 1
		}
		defer f.Close()
		in = f
	}
	st, err := audit.Replay(ctx, in, a, *writer)
	fmt.Fprintf(stdout, "lines=%d found=%d written=%d present=%d failed=%d malformed=%d refused=%d foreign=%d\n",
		st.Lines, st.Found, st.Written, st.Present, st.Failed, st.Malformed, st.Refused, st.Foreign)
	if err != nil {
		fmt.Fprintln(stderr, "mcpfn audit:", err)
		return 1
	}
	return 0
}
