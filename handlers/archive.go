package handlers

import (
	"archive/zip"
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mcpfn/mcpfn/adapter"
)

// ToolExport is the channel export: one zip of a channel's broadcasts and
// their attachments.
const ToolExport = "broadcast_export"

// Export limits.
const (
	// MaxExportBytes bounds an export's zip. The archive is built in a
	// temporary file, but handed to the adapter as one slice, which the
	// adapter encodes again as base64: its memory (MemoryMB) is sized
	// for this bound.
	MaxExportBytes = 64 << 20
	exportPageSize = maxListLimit
)

// ExportInput is broadcast_export's input.
type ExportInput struct {
	Channel string `json:"channel" jsonschema:"the channel to export"`
}

// ExportOutput is broadcast_export's structured output; the archive is its
// embedded resource.
type ExportOutput struct {
	Channel     string `json:"channel" jsonschema:"the channel exported"`
	Broadcasts  int    `json:"broadcasts" jsonschema:"how many broadcasts the archive holds"`
	Attachments int    `json:"attachments" jsonschema:"how many attachments the archive holds"`
	Name        string `json:"name" jsonschema:"the archive's file name"`
	Size        int64  `json:"size" jsonschema:"the archive's size in bytes"`
	SHA256      string `json:"sha256" jsonschema:"the SHA-256 of the archive (hex)"`
	URI         string `json:"uri" jsonschema:"the URI of the embedded resource holding the archive"`
}

// Export is broadcast_export: a channel's broadcasts, each as JSON
// (broadcasts/<id>.json, as broadcast_get returns it), and their
// attachments (attachments/<id>/<name>), in one zip returned as an
// embedded resource. It can take a while and run as a task, and reports
// progress per broadcast.
var Export = adapter.Declare(adapter.ToolDef[ExportInput, adapter.Content]{
	Name:  ToolExport,
	Title: "Export a channel",
	Description: "Returns one zip archive of a channel: every broadcast as JSON (broadcasts/<id>.json) and " +
		"every attachment's bytes (attachments/<id>/<name>), as an embedded resource (application/zip). " +
		"A big channel takes a while: the tool reports progress per broadcast and can run as a task " +
		"(poll it with tasks/get, stop it with tasks/cancel).",
	ReadOnly:     true,
	Idempotent:   true,
	TaskSupport:  adapter.TaskOptional,
	RefineInput:  adapter.Refine{"channel": channelSchema},
	OutputSchema: mustSchema[ExportOutput](),
	Tables:       broadcastsTable(ChannelIndex, "Query"),
	Buckets:      attachmentsBucket("GetObjectVersion"),
	Timeout:      15 * time.Minute,
	MemoryMB:     1024,
}, (*Store).export)

func (store *Store) export(ctx context.Context, call *adapter.Call, in ExportInput) (adapter.Content, error) {
	call.SetDimension(DimensionEntity, in.Channel)
	// Counted first, so progress has a total; a broadcast posted since is
	// exported all the same, and the total grows to match.
	total, err := store.Count(ctx, in.Channel)
	if err != nil {
		return adapter.Content{}, toolError(err)
	}
	// The archive goes to a temporary file as it is built: each
	// attachment streams from the bucket through the zip writer to disk,
	// and is never held in memory whole.
	f, err := os.CreateTemp("", "broadcast-export-*.zip")
	if err != nil {
		return adapter.Content{}, fmt.Errorf("handlers: export: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	arc := newArchive(f)

	out := ExportOutput{Channel: in.Channel, Name: in.Channel + ".zip"}
	cursor := ""
	for {
		page, err := store.List(ctx, in.Channel, exportPageSize, cursor)
		if err != nil {
			return adapter.Content{}, toolError(err)
		}
		for _, b := range page.Items {
			if err := ctx.Err(); err != nil {
				return adapter.Content{}, err
			}
			if err := arc.addJSON("broadcasts/"+b.ID+".json", b, b.CreatedAt); err != nil {
				return adapter.Content{}, err
			}
			if a := b.Attachment; a != nil {
				if arc.size()+a.Size > MaxExportBytes {
					return adapter.Content{}, exportTooLarge(in.Channel)
				}
				w, err := arc.create("attachments/"+b.ID+"/"+a.Name, a.AttachedAt, compressible(a.ContentType))
				if err != nil {
					return adapter.Content{}, err
				}
				if err := store.copyAttachment(ctx, *a, w); err != nil {
					return adapter.Content{}, attachmentError(err, b)
				}
				out.Attachments++
			}
			out.Broadcasts++
			total = max(total, out.Broadcasts)
			call.Progress(float64(out.Broadcasts), float64(total), fmt.Sprintf("broadcast %d of %d exported (%d attachments, %d bytes so far)", out.Broadcasts, total, out.Attachments, arc.size()))
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	data, sum, err := arc.finish()
	if err != nil {
		return adapter.Content{}, err
	}
	if len(data) > MaxExportBytes {
		return adapter.Content{}, exportTooLarge(in.Channel)
	}
	out.Size, out.SHA256 = int64(len(data)), sum
	out.URI = "broadcasts://channel/" + in.Channel + "/" + out.Name
	return adapter.Content{
		Blocks: []adapter.Block{
			adapter.BlobResource(out.URI, "application/zip", data),
			adapter.Text(fmt.Sprintf("%s: %d broadcasts and %d attachments of #%s (%d bytes, SHA-256 %s).", out.Name, out.Broadcasts, out.Attachments, out.Channel, out.Size, out.SHA256)),
		},
		Structured: out,
	}, nil
}

func exportTooLarge(channel string) error {
	return adapter.Errorf(adapter.CodePayloadTooLarge, "the export of #%s would exceed %d bytes", channel, MaxExportBytes).
		WithHint("read the channel with broadcast_list and its attachments one by one with broadcast_attachment")
}

// archive is a zip written to a file as it is built, hashed on the way.
type archive struct {
	f       *os.File
	counted *countingWriter
	buf     *bufio.Writer
	hash    hashWriter
	zw      *zip.Writer
}

type hashWriter interface {
	io.Writer
	Sum([]byte) []byte
}

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

func newArchive(f *os.File) *archive {
	a := &archive{f: f, counted: &countingWriter{}, hash: sha256.New()}
	a.buf = bufio.NewWriterSize(io.MultiWriter(f, a.hash, a.counted), 1<<20)
	a.zw = zip.NewWriter(a.buf)
	return a
}

// size is how many bytes the archive holds so far (what is still buffered
// not counted).
func (a *archive) size() int64 { return a.counted.n }

// create starts an entry: compressed (Deflate) or stored as is, modified at
// stamp (RFC 3339).
func (a *archive) create(name, stamp string, compress bool) (io.Writer, error) {
	h := &zip.FileHeader{Name: name, Method: zip.Store}
	if compress {
		h.Method = zip.Deflate
	}
	if t, err := time.Parse(time.RFC3339Nano, stamp); err == nil {
		h.Modified = t
	}
	w, err := a.zw.CreateHeader(h)
	if err != nil {
		return nil, fmt.Errorf("handlers: export: %w", err)
	}
	return w, nil
}

// addJSON adds v, indented, as the entry name.
func (a *archive) addJSON(name string, v any, stamp string) error {
	w, err := a.create(name, stamp, true)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("handlers: export: %w", err)
	}
	return nil
}

// finish closes the archive and reads it back: the adapter takes a
// resource's bytes as one slice, so here, and only here, the whole
// archive is in memory (once; its SHA-256 was taken as it was written).
func (a *archive) finish() ([]byte, string, error) {
	if err := a.zw.Close(); err != nil {
		return nil, "", fmt.Errorf("handlers: export: %w", err)
	}
	if err := a.buf.Flush(); err != nil {
		return nil, "", fmt.Errorf("handlers: export: %w", err)
	}
	data := make([]byte, a.counted.n)
	if _, err := a.f.ReadAt(data, 0); err != nil {
		return nil, "", fmt.Errorf("handlers: export: reading the archive back: %w", err)
	}
	return data, hex.EncodeToString(a.hash.Sum(nil)), nil
}

// compressible reports whether an attachment of this media type is worth
// deflating: text and the structured text formats. Most other formats
// (images, audio, video, archives, PDFs) are compressed already, and
// storing them keeps an export's time proportional to its bytes.
func compressible(contentType string) bool {
	ct := strings.ToLower(contentType)
	switch {
	case strings.HasPrefix(ct, "text/"), strings.HasSuffix(ct, "+json"), strings.HasSuffix(ct, "+xml"):
		return true
	}
	switch ct {
	case "application/json", "application/xml", "application/javascript", "application/x-ndjson", "application/yaml", "image/svg+xml":
		return true
	}
	return false
}
