package localtest_test

import (
	"archive/zip"
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/localtest/internal/claim"
	"github.com/mcpfn/mcpfn/wire"
)

// The demo's files through the stack (issue 22, "Must hold"): attachments
// whose arguments are past one Invoke's 5 MiB, and an export past Lambda's
// 6 MB answer and the gateway's 12 MiB inline ceiling, read by a go-sdk
// client synchronously and as a task.

const (
	demoAttachmentBytes = 4 << 20 // broadcast_attach's largest file
	demoAttachments     = 5
)

// demoExport is broadcast_export's structured output, as far as this test
// reads it.
type demoExport struct {
	Broadcasts  int    `json:"broadcasts"`
	Attachments int    `json:"attachments"`
	Name        string `json:"name"`
	Size        int64  `json:"size"`
	SHA256      string `json:"sha256"`
	URI         string `json:"uri"`
}

// TestDemoExportOfFiveLargeAttachments: five files of 4 MiB (random bytes)
// attached with broadcast_attach to five broadcasts of one channel — each
// call's 5.6 MB of arguments taken by the gateway for the tool that
// declared them and handed over through the payloads bucket — then the
// channel exported with broadcast_export (a zip past 20 MB), once
// synchronously and once as a task, each read by a go-sdk client: the
// archive arrives as a resource_link, its bytes are what the answer's
// structured output and the call's row say, and every attachment in it has
// the SHA-256 of the file put.
func TestDemoExportOfFiveLargeAttachments(t *testing.T) {
	began := time.Now()
	subject := unique("demo-files")
	cs := connect(t, subject)
	channel := unique("files")

	put := map[string]string{} // zip entry → SHA-256 of the file attached
	for i := range demoAttachments {
		id, _ := call(t, cs, "broadcast_create", map[string]any{"channel": channel, "text": fmt.Sprintf("file %d", i)})["id"].(string)
		data := make([]byte, demoAttachmentBytes)
		_, _ = rand.Read(data)
		name := fmt.Sprintf("file-%d.bin", i)
		out := call(t, cs, "broadcast_attach", map[string]any{"id": id, "name": name, "contentType": "application/octet-stream", "data": data})
		if att, _ := out["attachment"].(map[string]any); att["sha256"] != claim.SHA256(data) {
			t.Fatalf("attach answered %v, want the file's SHA-256 %s", out, claim.SHA256(data))
		}
		put["attachments/"+id+"/"+name] = claim.SHA256(data)
		checkAttachRow(t, id, data)
	}
	attached := time.Since(began)

	// The SHA-256 of the archive each export's client got.
	var gotSync, gotTask string
	t.Run("synchronous", func(t *testing.T) {
		start := time.Now()
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "broadcast_export", Arguments: map[string]any{"channel": channel}})
		if err != nil {
			t.Fatal(err)
		}
		gotSync = checkExport(t, res, put)
		t.Logf("synchronous export: %v", time.Since(start).Round(time.Millisecond))
	})
	t.Run("task", func(t *testing.T) {
		start := time.Now()
		c := claimTaskConn(t, subject)
		task := runTask(t, c, "broadcast_export", map[string]any{"channel": channel})
		gotTask = checkExport(t, taskResult(t, task), put)
		t.Logf("export as a task: %v", time.Since(start).Round(time.Millisecond))
	})

	// Each export's row — the function's, the task's run included — names
	// the stored result by version, and its size and SHA-256 are the
	// stored result's, whose archive block is the bytes the client got.
	rows, err := auditor().EntityRows(t.Context(), "entityId", channel, audit.QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var sync, task int
	for _, r := range rows {
		if r.Tool != "broadcast_export" || r.Writer == audit.GatewayWriter {
			continue
		}
		got := gotSync
		if r.TaskID != "" {
			task++
			got = gotTask
		} else {
			sync++
		}
		checkExportRow(t, r, got)
	}
	if sync != 1 || task != 1 {
		t.Errorf("%d synchronous and %d task rows of broadcast_export for #%s, want one of each: %+v", sync, task, channel, rows)
	}
	t.Logf("%d attaches of %d MiB: %v; everything: %v", demoAttachments, demoAttachmentBytes>>20, attached.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
}

// checkAttachRow: broadcast_attach's row for broadcast id names the
// arguments the gateway stored (their envelope past one Invoke), their
// size and SHA-256 the stored canonical arguments', which hold the file.
func checkAttachRow(t *testing.T, id string, data []byte) {
	t.Helper()
	rows, err := auditor().EntityRows(t.Context(), "entityId", id, audit.QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Tool != "broadcast_attach" || r.Status != audit.StatusDone || r.Writer == audit.GatewayWriter {
			continue
		}
		if !r.OK || r.ArgsObject == nil || !strings.HasPrefix(r.ArgsObject.Key, "broadcast_attach/args/") {
			t.Fatalf("row %+v: want a successful call whose arguments were stored", r)
		}
		stored := storedObject(t, r.ArgsObject)
		if int64(len(stored)) != r.ArgsBytes || claim.SHA256(stored) != r.ArgsSHA256 {
			t.Errorf("stored arguments: %d bytes (sha256 %s), row %d bytes (sha256 %s)", len(stored), claim.SHA256(stored), r.ArgsBytes, r.ArgsSHA256)
		}
		// Not decoded: 5.6 MB of JSON is seconds under the race detector.
		if !bytes.Contains(stored, []byte(`"data":"`+base64.StdEncoding.EncodeToString(data)+`"`)) || !bytes.Contains(stored, []byte(`"id":"`+id+`"`)) {
			t.Errorf("the stored arguments (%d bytes) are not the attach call's", len(stored))
		}
		return
	}
	t.Fatalf("no final row of broadcast_attach for broadcast %s: %+v", id, rows)
}

// checkExport reads an export's answer as its client would: the archive
// is a resource_link (past the gateway's inline ceiling), followed with the
// stack's S3 client; its bytes are the size and SHA-256 the structured
// output gives, and every file put is in it, byte for byte. It returns the
// archive's SHA-256.
func checkExport(t *testing.T, res *mcp.CallToolResult, put map[string]string) string {
	t.Helper()
	if res.IsError {
		t.Fatalf("broadcast_export failed: %s", text(res))
	}
	var out demoExport
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("structured content %.300s: %v", b, err)
	}
	if out.Attachments != len(put) || out.Broadcasts != len(put) || out.Size <= 20_000_000 {
		t.Fatalf("export %+v: want %d broadcasts and attachments, past 20 MB", out, len(put))
	}
	var link *mcp.ResourceLink
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.ResourceLink:
			link = c
		case *mcp.EmbeddedResource:
			t.Fatalf("the %d-byte archive arrived inline, past the gateway's inline ceiling", out.Size)
		}
	}
	if link == nil || link.MIMEType != "application/zip" || link.Size == nil || *link.Size != out.Size || link.Meta["io.mcpfn/resourceUri"] != out.URI {
		t.Fatalf("want the archive as a resource_link of %d bytes (application/zip, %s), got %+v", out.Size, out.URI, link)
	}
	resp, err := stack.S3HTTPClient().Get(link.URI)
	if err != nil {
		t.Fatal(err)
	}
	archive, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET the link: %d, %v", resp.StatusCode, err)
	}
	if int64(len(archive)) != out.Size || claim.SHA256(archive) != out.SHA256 {
		t.Fatalf("the link served %d bytes (sha256 %s); the export says %d (sha256 %s)", len(archive), claim.SHA256(archive), out.Size, out.SHA256)
	}
	zr, err := zip.NewReader(bytes.NewReader(archive), int64(len(archive)))
	if err != nil {
		t.Fatal(err)
	}
	found, jsons := 0, 0
	for _, f := range zr.File {
		if strings.HasPrefix(f.Name, "broadcasts/") {
			jsons++
			continue
		}
		want, ok := put[f.Name]
		if !ok {
			t.Errorf("the archive holds %s, which was not put", f.Name)
			continue
		}
		r, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(r)
		r.Close()
		if err != nil || claim.SHA256(data) != want {
			t.Errorf("%s: %d bytes, sha256 %s, want %s (%v)", f.Name, len(data), claim.SHA256(data), want, err)
		}
		found++
	}
	if found != len(put) || jsons != len(put) {
		t.Errorf("the archive holds %d of the %d files and %d broadcasts", found, len(put), jsons)
	}
	return out.SHA256
}

// checkExportRow: an export's row names its stored result by version,
// under the call's results; the row's size and SHA-256 are the stored
// result's, and that names the archive (stored as an object of its own)
// by the SHA-256 of the bytes the client got.
func checkExportRow(t *testing.T, r audit.Row, archiveSHA string) {
	t.Helper()
	if !r.OK || r.ResultObject == nil || r.ResultObject.VersionID == "" || !strings.HasPrefix(r.ResultObject.Key, "broadcast_export/results/"+r.CallID+"/") {
		t.Fatalf("row %+v: want a successful call whose result was stored under its results, by version", r)
	}
	doc := storedObject(t, r.ResultObject)
	if r.ResultBytes != len(doc) || r.ResultSHA256 != claim.SHA256(doc) {
		t.Errorf("row says %d bytes, sha256 %s; the stored result is %d bytes, sha256 %s", r.ResultBytes, r.ResultSHA256, len(doc), claim.SHA256(doc))
	}
	var stored struct {
		Content []wire.StoredBlock `json:"content"`
	}
	_ = json.Unmarshal(doc, &stored)
	for _, b := range stored.Content {
		if b.Type == wire.StoredBlockType {
			if b.Object.SHA256 != archiveSHA || b.MimeType != "application/zip" || !strings.HasPrefix(b.Object.Key, r.ResultObject.Key+".") {
				t.Errorf("the stored result's archive block %+v is not the archive the client got (sha256 %s)", b, archiveSHA)
			}
			return
		}
	}
	t.Errorf("the stored result %.400s holds no stored archive block", doc)
}
