package handlers_test

import (
	"archive/zip"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/handlers"
	"github.com/mcpfn/mcpfn/mcpfntest"
)

// The attachments of these tests are small but for one of the largest size
// (TestAttachmentInputLimitsAreInTheSchema), and their exports under 5 MB;
// localtest's TestDemoExportOfFiveLargeAttachments passes the largest
// through the claim check.

// randomBytes returns n bytes that do not compress.
func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// create posts a broadcast and returns its id.
func (a *app) create(t *testing.T, channel, text string) string {
	t.Helper()
	return mcpfntest.Output[handlers.CreateOutput](t, a.call(t, handlers.ToolCreate, map[string]any{"channel": channel, "text": text}, reader)).ID
}

// attach calls broadcast_attach as writer (unless opts name another
// caller); data marshals as base64, as a client sends it.
func (a *app) attach(t *testing.T, id, name, contentType string, data []byte, opts ...mcpfntest.Option) *mcpfntest.Result {
	t.Helper()
	args := map[string]any{"id": id, "name": name, "contentType": contentType, "data": data}
	return a.call(t, handlers.ToolAttach, args, append([]mcpfntest.Option{writer}, opts...)...)
}

// blob is an embedded resource with a blob, as the client reads it.
type blob struct {
	URI, MimeType string
	Data          []byte
}

// blobOf returns the one embedded blob resource of a successful result.
func blobOf(t *testing.T, r *mcpfntest.Result) blob {
	t.Helper()
	if r.IsError {
		t.Fatalf("the call failed: %s: %s", r.Code(), r.Err.Message)
	}
	var res struct {
		Content []struct {
			Type     string `json:"type"`
			Resource *struct {
				URI      string  `json:"uri"`
				MimeType string  `json:"mimeType"`
				Blob     *[]byte `json:"blob"`
				Text     *string `json:"text"`
			} `json:"resource"`
		} `json:"content"`
	}
	if err := json.Unmarshal(r.CallToolResult, &res); err != nil {
		t.Fatal(err)
	}
	var found []blob
	for _, c := range res.Content {
		if c.Type == "resource" && c.Resource != nil && c.Resource.Blob != nil {
			found = append(found, blob{c.Resource.URI, c.Resource.MimeType, *c.Resource.Blob})
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d embedded blob resources, want 1", len(found))
	}
	return found[0]
}

// stored is the attachment as the table holds it: where its bytes are.
func (a *app) stored(t *testing.T, id string) handlers.Attachment {
	t.Helper()
	b, err := a.store.Get(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if b.Attachment == nil {
		t.Fatalf("broadcast %s has no attachment", id)
	}
	if b.Attachment.Key == "" || b.Attachment.VersionID == "" {
		t.Fatalf("attachment %+v names no object version", b.Attachment)
	}
	return *b.Attachment
}

// objectBytes reads an object of the attachments bucket past the tools:
// its current version ("" version), or the one named.
func (a *app) objectBytes(t *testing.T, key, version string) ([]byte, error) {
	t.Helper()
	in := &s3.GetObjectInput{Bucket: aws.String(a.store.Bucket()), Key: aws.String(key)}
	if version != "" {
		in.VersionId = aws.String(version)
	}
	out, err := a.s3.GetObject(t.Context(), in)
	if err != nil {
		return nil, err
	}
	defer out.Body.Close()
	return io.ReadAll(out.Body)
}

func TestAttachThenAttachmentRoundTripsTheBytes(t *testing.T) {
	a := newApp(t)
	id := a.create(t, "general", "the quarterly report")
	data := randomBytes(1 << 20)

	attached := a.attach(t, id, "report Q3 — final.pdf", "application/pdf", data)
	got := mcpfntest.Output[handlers.AttachOutput](t, attached)
	att := got.Attachment
	if got.ID != id || att.Name != "report Q3 — final.pdf" || att.ContentType != "application/pdf" || att.Size != int64(len(data)) || att.SHA256 != sha(data) || att.AttachedAt == "" || got.Replaced != nil {
		t.Fatalf("attach answered %+v", got)
	}
	if raw := string(attached.CallToolResult); strings.Contains(raw, "versionId") || strings.Contains(raw, handlers.AttachmentPrefix) {
		t.Errorf("the answer names where the bytes are stored: %s", raw)
	}

	res := a.call(t, handlers.ToolAttachment, map[string]any{"id": id}, anonymous)
	b := blobOf(t, res)
	if sha(b.Data) != sha(data) || b.MimeType != "application/pdf" {
		t.Fatalf("attachment returned %d bytes (SHA-256 %s) of %s, want %d (%s) of application/pdf", len(b.Data), sha(b.Data), b.MimeType, len(data), sha(data))
	}
	out := mcpfntest.Output[handlers.AttachmentOutput](t, res)
	if out.ID != id || out.Attachment != att || out.URI != b.URI || !strings.HasSuffix(b.URI, "/report%20Q3%20%E2%80%94%20final.pdf") {
		t.Errorf("structured %+v, blob URI %s", out, b.URI)
	}

	// The broadcast says what it carries; listing and reading show it.
	if g := mcpfntest.Output[handlers.Broadcast](t, a.call(t, handlers.ToolGet, map[string]any{"id": id}, anonymous)); g.Attachment == nil || *g.Attachment != att {
		t.Errorf("get shows attachment %+v, want %+v", g.Attachment, att)
	}
	// The bytes are in the demo's bucket under its prefix, as the item
	// names them.
	st := a.stored(t, id)
	if !strings.HasPrefix(st.Key, handlers.AttachmentPrefix+id+"/") {
		t.Errorf("object key %q", st.Key)
	}
	if inBucket, err := a.objectBytes(t, st.Key, st.VersionID); err != nil || sha(inBucket) != sha(data) {
		t.Errorf("the bucket holds %d bytes (%v)", len(inBucket), err)
	}

	for _, r := range res.Rows {
		if r.Dimensions[handlers.DimensionEntity] != id {
			t.Errorf("%s row: entityId %q", r.Tool, r.Dimensions[handlers.DimensionEntity])
		}
	}
}

func TestAnEmptyFileIsAnAttachment(t *testing.T) {
	a := newApp(t)
	id := a.create(t, "general", "nothing inside")
	mcpfntest.Output[handlers.AttachOutput](t, a.attach(t, id, "empty.txt", "text/plain", []byte{}))
	if b := blobOf(t, a.call(t, handlers.ToolAttachment, map[string]any{"id": id}, anonymous)); len(b.Data) != 0 || b.MimeType != "text/plain" {
		t.Fatalf("blob %+v", b)
	}
}

func TestAttachAgainReplacesAndAReplayIsRefused(t *testing.T) {
	a := newApp(t)
	id := a.create(t, "general", "draft, then final")
	first, second, replayed := randomBytes(200<<10), randomBytes(300<<10), randomBytes(100<<10)

	firstCall := a.attach(t, id, "draft.bin", "application/octet-stream", first, mcpfntest.CallID("attach-draft"))
	one := mcpfntest.Output[handlers.AttachOutput](t, firstCall)
	// Destructive: one row written ahead of the handler, then completed.
	if len(firstCall.Rows) != 2 || firstCall.Rows[0].Status != audit.StatusPending || firstCall.Rows[1].Status != audit.StatusDone {
		t.Fatalf("rows of the first attach: %+v", firstCall.Rows)
	}
	old := a.stored(t, id)
	two := mcpfntest.Output[handlers.AttachOutput](t, a.attach(t, id, "final.bin", "application/octet-stream", second))
	if two.Replaced == nil || *two.Replaced != one.Attachment {
		t.Fatalf("the second attach replaced %+v, want %+v", two.Replaced, one.Attachment)
	}
	if b := blobOf(t, a.call(t, handlers.ToolAttachment, map[string]any{"id": id}, anonymous)); sha(b.Data) != sha(second) {
		t.Fatal("broadcast_attachment does not return the replacing file")
	}

	// The replaced file is hidden behind a delete marker — no tool's role
	// may delete a version for good — and its version stays until the
	// bucket's lifecycle expires it.
	if _, err := a.objectBytes(t, old.Key, ""); err == nil {
		t.Error("the replaced attachment's object is still current")
	}
	if kept, err := a.objectBytes(t, old.Key, old.VersionID); err != nil || sha(kept) != sha(first) {
		t.Errorf("the replaced version: %d bytes, %v", len(kept), err)
	}

	// A replay of the first call is refused: it neither runs nor replaces.
	replay := a.attach(t, id, "draft.bin", "application/octet-stream", replayed, mcpfntest.CallID("attach-draft"))
	wantCode(t, replay, adapter.CodeConflict)
	if b := blobOf(t, a.call(t, handlers.ToolAttachment, map[string]any{"id": id}, anonymous)); sha(b.Data) != sha(second) {
		t.Fatal("a refused replay replaced the attachment")
	}
	// The audit table holds the first call's one row, written ahead and
	// completed: the replay's write-ahead row was refused.
	rows := a.auditRows(t)
	if r := rows["attach-draft"]; r.Status != audit.StatusDone || !r.OK || !r.Destructive || r.Tool != handlers.ToolAttach {
		t.Errorf("audit row of the first attach: %+v", r)
	}
	pending := 0
	for _, r := range rows {
		if r.Status == audit.StatusPending {
			pending++
		}
	}
	if pending != 0 {
		t.Errorf("%d attaches left pending rows", pending)
	}
	// The replay's own final row cannot take the call id's place in the
	// table: the auditor prints it as a fallback line, and nothing else.
	for line := range strings.Lines(a.fallback.String()) {
		var fb struct{ Row audit.Row }
		if err := json.Unmarshal([]byte(line), &fb); err != nil || fb.Row.CallID != "attach-draft" || fb.Row.ErrorCode != string(adapter.CodeConflict) {
			t.Errorf("fallback line %.300s", line)
		}
	}
}

// TestConcurrentAttachesLeaveOneCurrentObject: of attaches to one
// broadcast at once, the item ends naming one of them, its object current;
// every other object is hidden by the call that replaced it, none left
// behind current, none named by the item but hidden.
func TestConcurrentAttachesLeaveOneCurrentObject(t *testing.T) {
	a := newApp(t)
	id := a.create(t, "general", "contended")
	const n = 8
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r := a.attach(t, id, fmt.Sprintf("f%d.txt", i), "text/plain", []byte(fmt.Sprintf("file %d", i)), mcpfntest.CallID(fmt.Sprintf("attach-%d", i)))
			if r.IsError {
				t.Errorf("attach %d: %s %s", i, r.Code(), r.Err.Message)
			}
			for _, row := range r.Rows {
				if left := row.Dimensions[handlers.DimensionLeftover]; left != "" {
					t.Errorf("attach %d left %s behind", i, left)
				}
			}
		})
	}
	wg.Wait()
	named := a.stored(t, id).Key
	current := 0
	for i := range n {
		key := handlers.AttachmentKeyOf(id, fmt.Sprintf("attach-%d", i))
		_, err := a.objectBytes(t, key, "")
		switch {
		case err == nil:
			current++
			if key != named {
				t.Errorf("%s is current, and the item names %s", key, named)
			}
		case !isAPIError(err, "AccessDenied"):
			t.Errorf("%s: %v", key, err)
		}
	}
	if current != 1 {
		t.Errorf("%d current objects, want the one the item names", current)
	}
}

func TestAttachNeedsTheWriteScope(t *testing.T) {
	a := newApp(t)
	id := a.create(t, "general", "keep it bare")
	data := []byte("not welcome")
	wantCode(t, a.attach(t, id, "x.txt", "text/plain", data, reader), adapter.CodeForbidden)
	wantCode(t, a.attach(t, id, "x.txt", "text/plain", data, anonymous), adapter.CodeUnauthorized)
	if g := mcpfntest.Output[handlers.Broadcast](t, a.call(t, handlers.ToolGet, map[string]any{"id": id}, anonymous)); g.Attachment != nil {
		t.Fatalf("a refused attach attached %+v", g.Attachment)
	}
}

func TestAttachmentInputLimitsAreInTheSchema(t *testing.T) {
	a := newApp(t)
	id := a.create(t, "general", "limits")
	ok := map[string]any{"id": id, "name": "a.txt", "contentType": "text/plain", "data": "aGk="}
	for name, change := range map[string]map[string]any{
		"slash in name":        {"name": "../etc/passwd"},
		"backslash in name":    {"name": `..\boot.ini`},
		"only dots":            {"name": ".."},
		"empty name":           {"name": ""},
		"control char in name": {"name": "a\nb.txt"},
		"name too long":        {"name": strings.Repeat("n", 256)},
		"no subtype":           {"contentType": "text"},
		"parameters":           {"contentType": "text/plain; charset=utf-8"},
		"not base64":           {"data": "not base64!"},
		"bad id":               {"id": "../x"},
	} {
		t.Run(name, func(t *testing.T) {
			args := map[string]any{}
			for k, v := range ok {
				args[k] = v
			}
			for k, v := range change {
				args[k] = v
			}
			wantCode(t, a.call(t, handlers.ToolAttach, args, writer), adapter.CodeValidation)
		})
	}
	// The same, unchanged, is accepted.
	mcpfntest.Output[handlers.AttachOutput](t, a.call(t, handlers.ToolAttach, ok, writer))

	// The largest file, with the longest name and media type, every
	// character of them escaped and every "/" of the base64 too, is inside
	// the tool's declared MaxArgumentBytes (what the gateway takes, then
	// stores as params.argumentsRef); a larger file is refused as such,
	// never by the argument limit.
	data := randomBytes(handlers.MaxAttachmentBytes)
	escaped := func(s string) string {
		var b strings.Builder
		for _, r := range s {
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		return b.String()
	}
	b64 := strings.ReplaceAll(base64.StdEncoding.EncodeToString(data), "/", `\/`)
	largest := fmt.Sprintf(`{"id":%q,"name":"%s","contentType":"%s","data":"%s"}`, id,
		escaped(strings.Repeat("é", 251)+".pdf"), escaped(strings.Repeat("a", 127)+"/"+strings.Repeat("b", 127)), b64)
	if limit := handlers.Attach.Tool().MaxArgumentBytes(); len(largest) > limit || limit > adapter.MaxArgumentBytesLimit {
		t.Fatalf("the largest arguments are %d bytes; the tool declares %d (at most %d)", len(largest), limit, adapter.MaxArgumentBytesLimit)
	}
	// These calls carry 4 MiB each: their decoding and checks are seconds
	// of CPU under -race, more than a function's 10 s on a machine shared
	// with a dozen other processes, and this test is about the limits, not
	// the time. No deadline (mcpfntest.Timeout(0)), so it fails only on
	// what it checks.
	noDeadline := mcpfntest.Timeout(0)
	got := mcpfntest.Output[handlers.AttachOutput](t, a.call(t, handlers.ToolAttach, json.RawMessage(largest), writer, noDeadline))
	if got.Attachment.Size != handlers.MaxAttachmentBytes || got.Attachment.SHA256 != sha(data) {
		t.Fatalf("attached %+v, want %d bytes, SHA-256 %s", got.Attachment, len(data), sha(data))
	}
	// 4 MiB is 3·1398101 + 1 bytes: its base64 is padded, so one or two
	// bytes more have base64 as long, which the handler refuses; three
	// more are past the schema's maxLength.
	over := func(n int) map[string]any {
		return map[string]any{"id": id, "name": "a.bin", "contentType": "application/octet-stream", "data": randomBytes(n)}
	}
	wantCode(t, a.call(t, handlers.ToolAttach, over(handlers.MaxAttachmentBytes+1), writer, noDeadline), adapter.CodePayloadTooLarge)
	wantCode(t, a.call(t, handlers.ToolAttach, over(handlers.MaxAttachmentBytes+3), writer, noDeadline), adapter.CodeValidation)
}

func TestAMissingBroadcastIsNotFound(t *testing.T) {
	a := newApp(t)
	r := a.attach(t, missingID, "a.txt", "text/plain", []byte("hello"))
	wantCode(t, r, adapter.CodeNotFound)
	wantCode(t, a.call(t, handlers.ToolAttachment, map[string]any{"id": missingID}, anonymous), adapter.CodeNotFound)

	// A broadcast without an attachment is found; its attachment is not.
	id := a.create(t, "general", "bare")
	r = a.call(t, handlers.ToolAttachment, map[string]any{"id": id}, anonymous)
	wantCode(t, r, adapter.CodeNotFound)
	if !strings.Contains(r.Err.Message, "no attachment") {
		t.Errorf("message %q", r.Err.Message)
	}
}

// TestADeletedObjectIsAClearError: the object a broadcast's item names is
// deleted behind its back (or expired): reading it is NOT_FOUND saying so,
// never an empty file, and an export of its channel fails the same way.
func TestADeletedObjectIsAClearError(t *testing.T) {
	a := newApp(t)
	id := a.create(t, "general", "soon without its file")
	mcpfntest.Output[handlers.AttachOutput](t, a.attach(t, id, "gone.txt", "text/plain", []byte("here today")))
	st := a.stored(t, id)
	if _, err := a.s3.DeleteObject(t.Context(), &s3.DeleteObjectInput{Bucket: aws.String(a.store.Bucket()), Key: aws.String(st.Key), VersionId: aws.String(st.VersionID)}); err != nil {
		t.Fatal(err)
	}

	for _, r := range []*mcpfntest.Result{
		a.call(t, handlers.ToolAttachment, map[string]any{"id": id}, anonymous),
		a.call(t, handlers.ToolExport, map[string]any{"channel": "general"}, anonymous),
	} {
		wantCode(t, r, adapter.CodeNotFound)
		if !strings.Contains(r.Err.Message, "gone.txt") || !strings.Contains(r.Err.Message, "no longer stored") || r.Err.Retryable {
			t.Errorf("error %+v", r.Err)
		}
		if final := r.Rows[len(r.Rows)-1]; final.OK || final.ErrorCode != string(adapter.CodeNotFound) {
			t.Errorf("row %+v", final)
		}
	}
}

// TestBytesThatAreNotThoseAttachedAreRefused: the item's SHA-256 is the
// authority; bytes that do not match it are an error, not an answer.
func TestBytesThatAreNotThoseAttachedAreRefused(t *testing.T) {
	a := newApp(t)
	id := a.create(t, "general", "tampered")
	mcpfntest.Output[handlers.AttachOutput](t, a.attach(t, id, "a.txt", "text/plain", []byte("the original")))
	_, err := a.db.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{
		TableName:                 aws.String(a.store.Table()),
		Key:                       map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}},
		UpdateExpression:          aws.String("SET attachment.sha256 = :s"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": &types.AttributeValueMemberS{Value: sha([]byte("something else"))}},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := a.call(t, handlers.ToolAttachment, map[string]any{"id": id}, anonymous)
	wantCode(t, r, adapter.CodeInternal)
	if !strings.Contains(r.Err.Message, "not those attached") {
		t.Errorf("message %q", r.Err.Message)
	}
}

func TestDeleteTakesTheAttachmentAlong(t *testing.T) {
	a := newApp(t)
	id := a.create(t, "general", "with a file")
	data := []byte("attached, then deleted")
	mcpfntest.Output[handlers.AttachOutput](t, a.attach(t, id, "a.txt", "text/plain", data))
	st := a.stored(t, id)

	res := a.call(t, handlers.ToolDelete, map[string]any{"id": id}, writer)
	if d := mcpfntest.Output[handlers.DeleteOutput](t, res); d.Deleted.Attachment == nil || d.Deleted.Attachment.SHA256 != sha(data) {
		t.Fatalf("delete answered %+v", d.Deleted)
	}
	if _, err := a.objectBytes(t, st.Key, ""); !isAPIError(err, "AccessDenied") {
		t.Errorf("the deleted broadcast's object: %v, want it hidden (403 to a caller that cannot list)", err)
	}
	if kept, err := a.objectBytes(t, st.Key, st.VersionID); err != nil || !bytes.Equal(kept, data) {
		t.Errorf("its version: %q, %v; want it kept until the lifecycle expires it", kept, err)
	}
	if final := res.Rows[len(res.Rows)-1]; final.Dimensions[handlers.DimensionLeftover] != "" {
		t.Errorf("row names a leftover object: %+v", final.Dimensions)
	}
}

func isAPIError(err error, code string) bool {
	var apiErr smithy.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode() == code
}

// exported is an export's archive, read.
type exported struct {
	out     handlers.ExportOutput
	files   map[string][]byte
	methods map[string]uint16
}

func (a *app) export(t *testing.T, channel string, opts ...mcpfntest.Option) (exported, *mcpfntest.Result) {
	t.Helper()
	res := a.call(t, handlers.ToolExport, map[string]any{"channel": channel}, append([]mcpfntest.Option{anonymous}, opts...)...)
	b := blobOf(t, res)
	e := exported{out: mcpfntest.Output[handlers.ExportOutput](t, res), files: map[string][]byte{}, methods: map[string]uint16{}}
	if b.MimeType != "application/zip" || b.URI != e.out.URI || e.out.Size != int64(len(b.Data)) || e.out.SHA256 != sha(b.Data) {
		t.Fatalf("blob %s (%s, %d bytes, SHA-256 %s), structured %+v", b.URI, b.MimeType, len(b.Data), sha(b.Data), e.out)
	}
	zr, err := zip.NewReader(bytes.NewReader(b.Data), int64(len(b.Data)))
	if err != nil {
		t.Fatalf("the export is not a zip: %v", err)
	}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		if _, dup := e.files[f.Name]; dup {
			t.Fatalf("%s twice in the archive", f.Name)
		}
		e.files[f.Name], e.methods[f.Name] = body, f.Method
	}
	return e, res
}

func TestExportZipsEveryBroadcastAndEveryAttachment(t *testing.T) {
	a := newApp(t)
	files := map[string][]byte{} // broadcast id → its attachment's bytes
	var ids []string
	for i := range 5 {
		id := a.create(t, "launch", fmt.Sprintf("launch note %d", i))
		ids = append(ids, id)
		switch i {
		case 0, 2, 4:
			data := randomBytes(700 << 10)
			mcpfntest.Output[handlers.AttachOutput](t, a.attach(t, id, fmt.Sprintf("photo-%d.jpg", i), "image/jpeg", data))
			files[id] = data
		case 3:
			data := []byte(strings.Repeat("release notes, line after line\n", 2000))
			mcpfntest.Output[handlers.AttachOutput](t, a.attach(t, id, "notes.txt", "text/plain", data))
			files[id] = data
		}
	}
	other := a.create(t, "elsewhere", "not in the export")
	mcpfntest.Output[handlers.AttachOutput](t, a.attach(t, other, "other.txt", "text/plain", []byte("other")))

	e, res := a.export(t, "launch", mcpfntest.OnProgress(nil))
	if e.out.Channel != "launch" || e.out.Broadcasts != 5 || e.out.Attachments != 4 || e.out.Name != "launch.zip" {
		t.Fatalf("export %+v", e.out)
	}
	if len(e.files) != 5+4 {
		t.Errorf("%d entries, want 9", len(e.files))
	}
	for _, id := range ids {
		want := mcpfntest.Output[handlers.Broadcast](t, a.call(t, handlers.ToolGet, map[string]any{"id": id}, anonymous))
		var got handlers.Broadcast
		if err := json.Unmarshal(e.files["broadcasts/"+id+".json"], &got); err != nil {
			t.Fatalf("broadcasts/%s.json: %v", id, err)
		}
		if got.ID != want.ID || got.Text != want.Text || got.CreatedAt != want.CreatedAt || (got.Attachment == nil) != (want.Attachment == nil) ||
			got.Attachment != nil && *got.Attachment != *want.Attachment {
			t.Errorf("broadcasts/%s.json = %+v, broadcast_get %+v", id, got, want)
		}
		data, ok := files[id]
		if !ok {
			continue
		}
		name := "attachments/" + id + "/" + want.Attachment.Name
		if sha(e.files[name]) != sha(data) {
			t.Errorf("%s: %d bytes (SHA-256 %s), attached %d (%s)", name, len(e.files[name]), sha(e.files[name]), len(data), sha(data))
		}
		if want.Attachment.ContentType == "text/plain" && e.methods[name] != zip.Deflate || want.Attachment.ContentType == "image/jpeg" && e.methods[name] != zip.Store {
			t.Errorf("%s (%s) stored with method %d", name, want.Attachment.ContentType, e.methods[name])
		}
	}

	// One progress report per broadcast, against the channel's count.
	if len(res.Progress) != 5 {
		t.Fatalf("%d progress reports, want 5: %+v", len(res.Progress), res.Progress)
	}
	for i, p := range res.Progress {
		if p.Progress != float64(i+1) || p.Total != 5 {
			t.Errorf("report %d: %+v", i, p)
		}
	}
	if row := res.Rows[len(res.Rows)-1]; row.Dimensions[handlers.DimensionEntity] != "launch" {
		t.Errorf("row entity %q", row.Dimensions[handlers.DimensionEntity])
	}
}

func TestExportOfAnEmptyChannelIsAnEmptyArchive(t *testing.T) {
	a := newApp(t)
	e, _ := a.export(t, "quiet")
	if e.out.Broadcasts != 0 || e.out.Attachments != 0 || len(e.files) != 0 {
		t.Fatalf("export %+v with %d files", e.out, len(e.files))
	}
}

func TestExportIsATaskOptionalReadOnlyTool(t *testing.T) {
	for _, tool := range handlers.Catalog() {
		if tool.Name() != handlers.ToolExport {
			continue
		}
		if tool.TaskSupport() != adapter.TaskOptional || tool.Destructive() {
			t.Errorf("TaskSupport %q, destructive %v", tool.TaskSupport(), tool.Destructive())
		}
		return
	}
	t.Fatalf("%s is not in the catalog", handlers.ToolExport)
}
