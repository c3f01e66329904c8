package auditcli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/claimcheck"
	"github.com/mcpfn/mcpfn/internal/claimtest"
	"github.com/mcpfn/mcpfn/wire"
)

// TestVerifyChecksStoredObjectsAgainstTheirRow: verify reads the stored
// arguments, the stored result and the blob the result names, and says OK
// for each when they are what the row recorded; a row whose SHA-256 is not
// its object's, or whose object is gone, is reported and exits 1; inline
// payloads are reported as such.
func TestVerifyChecksStoredObjectsAgainstTheirRow(t *testing.T) {
	store, _, url := claimtest.Start(t)
	ctx := context.Background()
	blob, err := store.Put(ctx, "claim/results/c-ok/a1.1", "application/zip", bytes.Repeat([]byte("zip"), 1000))
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := json.Marshal(map[string]any{"content": []any{map[string]string{"type": "text", "text": "here"},
		wire.StoredBlock{Type: wire.StoredBlockType, Block: "resource", MimeType: "application/zip", URI: "file:///x.zip", Object: blob}}})
	res, err := store.Put(ctx, "claim/results/c-ok/a1", claimcheck.JSON, doc)
	if err != nil {
		t.Fatal(err)
	}
	args, err := store.Put(ctx, "claim/args/c-ok", claimcheck.JSON, []byte(`{"data":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	obj := func(r wire.ObjectRef) *audit.Object {
		return &audit.Object{Bucket: r.Bucket, Key: r.Key, VersionID: r.VersionID}
	}
	ok := row("c-ok", "3333333333333333", "", 0)
	ok.Tool, ok.ArgsBytes, ok.ArgsSHA256, ok.ArgsObject = "claim", args.Size, args.SHA256, obj(args)
	ok.ResultBytes, ok.ResultSHA256, ok.ResultObject = int(res.Size), res.SHA256, obj(res)
	bad := row("c-bad", "4444444444444444", "", 0)
	s := sha256.Sum256([]byte("another result"))
	bad.Tool, bad.ResultBytes, bad.ResultSHA256, bad.ResultObject = "claim", int(res.Size), hex.EncodeToString(s[:]), obj(res)
	gone := row("c-gone", "5555555555555555", "", 0)
	missing := res
	missing.VersionID = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	gone.Tool, gone.ResultBytes, gone.ResultSHA256, gone.ResultObject = "claim", int(res.Size), res.SHA256, obj(missing)
	inline := row("c-inline", "6666666666666666", "", 0)
	inline.Tool, inline.ReceivedArgs, inline.Result = "claim", []byte(`{}`), []byte(`{"content":[]}`)
	name := table(t, ok, bad, gone, inline)
	t.Setenv("AWS_ENDPOINT_URL_S3", url)
	t.Setenv(claimcheck.EnvUsePathStyle, "true")
	cli := func(args ...string) (string, int) {
		var out, errb bytes.Buffer
		code := Run(ctx, append([]string{"-table", name, "verify"}, args...), nil, &out, &errb)
		return out.String() + errb.String(), code
	}
	if out, code := cli("-tool", "claim", "c-ok"); code != 0 || strings.Count(out, ": OK") != 3 || !strings.Contains(out, "resource named by the result") {
		t.Errorf("c-ok: code %d:\n%s", code, out)
	}
	if out, code := cli("-tool", "claim", "c-bad"); code != 1 || !strings.Contains(out, "MISMATCH") {
		t.Errorf("c-bad: code %d:\n%s", code, out)
	}
	if out, code := cli("-tool", "claim", "c-gone"); code != 1 || !strings.Contains(out, "MISSING") {
		t.Errorf("c-gone: code %d:\n%s", code, out)
	}
	if out, code := cli("-tool", "claim", "c-inline"); code != 0 || strings.Count(out, "nothing stored to check") != 2 {
		t.Errorf("c-inline: code %d:\n%s", code, out)
	}
	if out, code := cli("c-ok"); code != 2 {
		t.Errorf("without -tool: code %d:\n%s", code, out)
	}
}
