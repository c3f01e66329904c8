package auditcli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/xray"

	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/audit/viewer"
)

// serve is `mcpfn audit serve`: the viewer on the auditor the global flags
// configured, segments from a file, the X-Ray API or nowhere.
func serve(ctx context.Context, awsCfg aws.Config, a *audit.Auditor, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpfn audit serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", viewer.DefaultAddr, "listen address (keep it on loopback: the viewer has no login)")
	xrayFile := fs.String("xray-file", "", "X-Ray segment documents, one JSON object per line (the local stack's .local/xray.jsonl); without it the X-Ray API is asked (BatchGetTraces)")
	noXRay := fs.Bool("no-xray", false, "show audit rows only, no X-Ray segments")
	hosts := fs.String("hosts", "", "comma-separated Host names served besides loopback ones")
	if fs.Parse(args) != nil {
		return 2
	}
	cfg := viewer.Config{Auditor: a, AllowedHosts: strings.FieldsFunc(*hosts, func(r rune) bool { return r == ',' || r == ' ' })}
	switch {
	case *noXRay:
	case *xrayFile != "":
		cfg.Segments = viewer.FileSegments(*xrayFile)
	default:
		cfg.Segments = viewer.XRaySegments{Client: xray.NewFromConfig(awsCfg)}
	}
	v, err := viewer.New(cfg)
	if err != nil {
		fmt.Fprintln(stderr, "mcpfn audit serve:", err)
		return 1
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(stderr, "mcpfn audit serve:", err)
		return 1
	}
	fmt.Fprintf(stdout, "VIEWER url=http://%s/\n", ln.Addr())
	if err := v.Serve(ctx, ln); err != nil {
		fmt.Fprintln(stderr, "mcpfn audit serve:", err)
		return 1
	}
	return 0
}
