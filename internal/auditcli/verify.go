package auditcli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/claimcheck"
	"github.com/mcpfn/mcpfn/wire"
)

// verify is `mcpfn audit verify -tool T <callId>`: the objects a call's rows
// name — its stored arguments, its stored result, and each blob the stored
// result names — read from S3 through a hash and compared with the size
// and SHA-256 the row recorded (decision 0037). A row whose arguments or
// result were answered inline has nothing stored to check: its size and
// SHA-256 are the record of what was sent. Exit 0 when every object
// matches, 1 when one does not, is gone, or cannot be read.
func verify(ctx context.Context, awsCfg aws.Config, a *audit.Auditor, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpfn audit verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tool := fs.String("tool", "", "the tool whose function served the call (its rows are keyed <tool>#<callId>)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *tool == "" || fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: mcpfn audit verify -tool <tool> <callId>")
		return 2
	}
	callID := fs.Arg(0)
	store := &claimcheck.Store{Client: claimcheck.NewClient(awsCfg, os.Getenv)}
	found, failed := 0, 0
	for _, writer := range []string{*tool, audit.GatewayWriter} {
		row, ok, err := a.CallRow(ctx, writer, callID)
		if err != nil {
			fmt.Fprintln(stderr, "mcpfn audit:", err)
			return 1
		}
		if !ok {
			continue
		}
		found++
		fmt.Fprintf(stdout, "%s row of call %s (%s, ok=%t)\n", writer, callID, row.Status, row.OK)
		failed += check(ctx, store, stdout, "arguments", row.ArgsBytes, row.ArgsSHA256, row.ArgsObject, false)
		failed += check(ctx, store, stdout, "result", int64(row.ResultBytes), row.ResultSHA256, row.ResultObject, true)
	}
	if found == 0 {
		fmt.Fprintf(stderr, "mcpfn audit: call %s has no row of %s or of the gateway\n", callID, *tool)
		return 1
	}
	if failed > 0 {
		fmt.Fprintf(stdout, "%d object(s) do not match their row\n", failed)
		return 1
	}
	return 0
}

// check verifies one payload of a row and, for a stored result, the blobs
// it names; it returns how many failed.
func check(ctx context.Context, store *claimcheck.Store, out io.Writer, what string, size int64, sha string, o *audit.Object, result bool) int {
	switch {
	case o == nil && sha == "":
		fmt.Fprintf(out, "  %s: not recorded (a row written before rows proved their bytes)\n", what)
		return 0
	case o == nil:
		fmt.Fprintf(out, "  %s: inline, %d bytes, sha256 %s (nothing stored to check)\n", what, size, sha)
		return 0
	}
	ref := &wire.ObjectRef{Bucket: o.Bucket, Key: o.Key, VersionID: o.VersionID, Size: size, SHA256: sha}
	where := fmt.Sprintf("s3://%s/%s?versionId=%s", o.Bucket, o.Key, o.VersionID)
	if !result {
		return report(out, "  "+what, where, size, sha, store.Verify(ctx, ref))
	}
	// The result is read whole (it is at most what an answer carries, its
	// blobs aside): its blob references are checked next.
	doc, err := store.Read(ctx, ref, 0)
	failed := report(out, "  "+what, where, size, sha, err)
	if err != nil {
		return failed
	}
	var sr struct {
		Content []json.RawMessage `json:"content"`
	}
	_ = json.Unmarshal(doc, &sr)
	for _, raw := range sr.Content {
		var b wire.StoredBlock
		if json.Unmarshal(raw, &b) != nil || b.Type != wire.StoredBlockType {
			continue
		}
		bw := fmt.Sprintf("s3://%s/%s?versionId=%s", b.Object.Bucket, b.Object.Key, b.Object.VersionID)
		err := b.Object.Check(o.Bucket, o.Key+".")
		if err == nil {
			err = store.Verify(ctx, &b.Object)
		}
		failed += report(out, "    "+b.Block+" named by the result", bw, b.Object.Size, b.Object.SHA256, err)
	}
	return failed
}

// report prints one object's verdict and returns 1 when it failed.
func report(out io.Writer, label, where string, size int64, sha string, err error) int {
	verdict := "OK"
	switch k := claimcheck.KindOf(err); {
	case err == nil:
	case k == claimcheck.Tampered:
		verdict = "MISMATCH: " + err.Error()
	case k == claimcheck.Missing:
		verdict = "MISSING (expired, deleted, or not readable with these credentials): " + err.Error()
	default:
		var e *claimcheck.Error
		if !errors.As(err, &e) {
			verdict = "ERROR: " + err.Error()
		} else {
			verdict = "UNREADABLE: " + err.Error()
		}
	}
	fmt.Fprintf(out, "%s: %s: %d bytes, sha256 %s: %s\n", label, where, size, sha, verdict)
	if err != nil {
		return 1
	}
	return 0
}
