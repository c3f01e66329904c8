package handlers

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/mcpfn/mcpfn/adapter"
)

// The attachment tools' names.
const (
	ToolAttach     = "broadcast_attach"
	ToolAttachment = "broadcast_attachment"
)

// DimensionLeftover is the dimension a call records when it replaced or
// deleted an attachment but could not remove the old object from the
// bucket: its key, for an operator to remove. The call itself succeeded —
// the broadcast was already changed — so only its row says so.
const DimensionLeftover = "leftoverObject"

// Limits of an attachment's name and type, advertised in the schema.
const (
	maxAttachmentNameLen = 255
	maxContentTypeLen    = 255
	// A file name: no slash or backslash (it names an entry in an export's
	// zip, never a directory), no control character, and not only dots.
	nameChar      = `[^/\\\x00-\x1f\x7f]`
	nameCharNoDot = `[^/\\\x00-\x1f\x7f.]`
	// A media type as RFC 6838 names them (type/subtype), without
	// parameters.
	mediaTypeName = `[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}`
)

// AttachInput is broadcast_attach's input.
type AttachInput struct {
	ID          string `json:"id" jsonschema:"the broadcast to attach the file to"`
	Name        string `json:"name" jsonschema:"the file's name, e.g. report.pdf"`
	ContentType string `json:"contentType" jsonschema:"the file's media type, e.g. application/pdf"`
	Data        []byte `json:"data" jsonschema:"the file's bytes, base64-encoded (standard alphabet, padded)"`
}

// AttachOutput is broadcast_attach's output.
type AttachOutput struct {
	ID         string      `json:"id" jsonschema:"the broadcast's id"`
	Attachment Attachment  `json:"attachment" jsonschema:"the file now attached"`
	Replaced   *Attachment `json:"replaced,omitempty" jsonschema:"the file it replaced, if the broadcast had one"`
}

// AttachmentInput is broadcast_attachment's input.
type AttachmentInput struct {
	ID string `json:"id" jsonschema:"the broadcast whose attachment to return"`
}

// AttachmentOutput is broadcast_attachment's structured output; the bytes
// are its embedded resource.
type AttachmentOutput struct {
	ID         string     `json:"id" jsonschema:"the broadcast's id"`
	Attachment Attachment `json:"attachment" jsonschema:"the file attached to it"`
	URI        string     `json:"uri" jsonschema:"the URI of the embedded resource holding the file's bytes"`
}

// attachmentOutputSchema is broadcast_attachment's output schema: a tool
// whose output is adapter.Content has none unless it gives one.
var attachmentOutputSchema = mustSchema[AttachmentOutput]()

// mustSchema infers T's JSON Schema; T has no pointer, slice or map, so the
// schema needs none of the adapter's rewriting for portability.
func mustSchema[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(err)
	}
	return s
}

// attachmentsBucket is the demo's bucket (template.yaml's AttachmentsBucket),
// read through AttachmentsEnv, with actions confined to AttachmentPrefix.
func attachmentsBucket(actions ...string) []adapter.BucketAccess {
	return []adapter.BucketAccess{{Bucket: "AttachmentsBucket", Env: AttachmentsEnv, Actions: actions, Prefix: AttachmentPrefix}}
}

// Attach is broadcast_attach. It is destructive — it replaces the earlier
// attachment — so the audit writes its row ahead and a replay of the same
// call is refused; it requires ScopeWrite.
var Attach = adapter.Declare(adapter.ToolDef[AttachInput, AttachOutput]{
	Name:  ToolAttach,
	Title: "Attach a file to a broadcast",
	Description: "Attaches a file to a broadcast: its name, media type and bytes (base64, at most 4 MiB). " +
		"A broadcast carries one attachment: attaching again replaces the earlier one. " +
		"Read it back with broadcast_attachment. Requires scope broadcasts:write.",
	Destructive: true,
	Scopes:      []string{ScopeWrite},
	RefineInput: adapter.Refine{
		"id": idSchema,
		"name": func(p *jsonschema.Schema) {
			p.MinLength, p.MaxLength = jsonschema.Ptr(1), jsonschema.Ptr(maxAttachmentNameLen)
			p.Pattern = "^" + nameChar + "*" + nameCharNoDot + nameChar + "*$"
		},
		"contentType": func(p *jsonschema.Schema) {
			p.MaxLength = jsonschema.Ptr(maxContentTypeLen)
			p.Pattern = "^" + mediaTypeName + "/" + mediaTypeName + "$"
		},
		"data": func(p *jsonschema.Schema) {
			p.MaxLength = jsonschema.Ptr(base64.StdEncoding.EncodedLen(MaxAttachmentBytes))
			p.ContentEncoding = "base64"
		},
	},
	// GetItem: refuse a missing broadcast before storing any bytes;
	// UpdateItem: record the attachment, learning the one it replaces.
	Tables: broadcastsTable("", "GetItem", "UpdateItem"),
	// PutObject: the new object; DeleteObject: a delete marker over the
	// replaced one (its version expires with the bucket's lifecycle).
	Buckets: attachmentsBucket("PutObject", "DeleteObject"),
	// Its arguments are up to 5.6 MB of base64, held as text and as bytes.
	MemoryMB: 512,
}, (*Store).attach)

func (store *Store) attach(ctx context.Context, call *adapter.Call, in AttachInput) (AttachOutput, error) {
	call.SetDimension(DimensionEntity, in.ID)
	if len(in.Data) > MaxAttachmentBytes {
		return AttachOutput{}, adapter.Errorf(adapter.CodePayloadTooLarge, "the file is %d bytes; an attachment holds at most %d", len(in.Data), MaxAttachmentBytes)
	}
	if _, err := store.Get(ctx, in.ID); err != nil {
		return AttachOutput{}, toolError(err)
	}
	sum := sha256.Sum256(in.Data)
	a := Attachment{
		Name: in.Name, ContentType: in.ContentType, Size: int64(len(in.Data)), SHA256: hex.EncodeToString(sum[:]),
		AttachedAt: store.stamp(), Key: attachmentKey(in.ID, derivedID(attachmentIDDomain, call)),
	}
	version, err := store.storeAttachment(ctx, a, in.Data)
	if err != nil {
		return AttachOutput{}, toolError(err)
	}
	a.VersionID = version
	replaced, err := store.SetAttachment(ctx, in.ID, a)
	if errors.Is(err, ErrNotFound) {
		// Deleted while its bytes were stored: nothing names them.
		store.dropAttachmentObject(ctx, call, a.Key)
		return AttachOutput{}, toolError(err)
	}
	if err != nil {
		// The item may or may not name the new object now (a timeout
		// does not say), so the object stays.
		return AttachOutput{}, toolError(err)
	}
	if replaced != nil && replaced.Key != a.Key {
		store.dropAttachmentObject(ctx, call, replaced.Key)
	}
	return AttachOutput{ID: in.ID, Attachment: a, Replaced: replaced}, nil
}

// attachmentIDDomain derives an attachment's id from its call's id: a
// retry of the call (which the audit refuses, attach being destructive)
// could only ever write the same key.
const attachmentIDDomain = "mcpfn/broadcast-attachment/v1"

// dropAttachmentObject removes the object of an attachment that no item
// names any more. A failure leaves it in the bucket and the call's row
// naming it (DimensionLeftover), rather than failing a call whose
// broadcast is already changed.
func (store *Store) dropAttachmentObject(ctx context.Context, call *adapter.Call, key string) {
	if err := store.dropObject(ctx, key); err != nil {
		call.SetDimension(DimensionLeftover, key)
	}
}

// GetAttachment is broadcast_attachment: the file's bytes as an embedded
// resource, read by the version the broadcast's item names and checked
// against the SHA-256 recorded when it was attached.
var GetAttachment = adapter.Declare(adapter.ToolDef[AttachmentInput, adapter.Content]{
	Name:  ToolAttachment,
	Title: "Read a broadcast's attachment",
	Description: "Returns the file attached to a broadcast: its bytes as an embedded resource (base64 blob, " +
		"with its media type), and its name, size and SHA-256.",
	ReadOnly:     true,
	Idempotent:   true,
	RefineInput:  adapter.Refine{"id": idSchema},
	OutputSchema: attachmentOutputSchema,
	Tables:       broadcastsTable("", "GetItem"),
	// Reads name the version the item recorded: s3:GetObjectVersion.
	Buckets: attachmentsBucket("GetObjectVersion"),
	// The file's bytes, and the result that carries them in base64.
	MemoryMB: 512,
}, (*Store).attachment)

func (store *Store) attachment(ctx context.Context, call *adapter.Call, in AttachmentInput) (adapter.Content, error) {
	call.SetDimension(DimensionEntity, in.ID)
	b, err := store.Get(ctx, in.ID)
	if err != nil {
		return adapter.Content{}, toolError(err)
	}
	if b.Attachment == nil {
		return adapter.Content{}, toolError(ErrNoAttachment)
	}
	a := *b.Attachment
	data, err := store.readAttachment(ctx, a)
	if err != nil {
		return adapter.Content{}, attachmentError(err, b)
	}
	uri := attachmentURI(b.ID, a.Name)
	return adapter.Content{
		Blocks: []adapter.Block{
			adapter.BlobResource(uri, a.ContentType, data),
			adapter.Text(fmt.Sprintf("%s (%s, %d bytes, SHA-256 %s), attached to broadcast %s at %s.", a.Name, a.ContentType, a.Size, a.SHA256, b.ID, a.AttachedAt)),
		},
		Structured: AttachmentOutput{ID: b.ID, Attachment: a, URI: uri},
	}, nil
}

// attachmentURI names a broadcast's attachment as an MCP resource.
func attachmentURI(id, name string) string {
	return "broadcasts://broadcast/" + id + "/attachment/" + url.PathEscape(name)
}

// attachmentError is toolError for a failure reading b's attachment,
// naming the broadcast and the file.
func attachmentError(err error, b Broadcast) error {
	switch {
	case errors.Is(err, ErrAttachmentGone):
		return adapter.Errorf(adapter.CodeNotFound, "the bytes of %q, the attachment of broadcast %s, are no longer stored (deleted or expired)", b.Attachment.Name, b.ID).
			WithHint("attach the file again with broadcast_attach").WithCause(err)
	case errors.Is(err, ErrAttachmentAltered):
		return adapter.Errorf(adapter.CodeInternal, "the stored bytes of %q, the attachment of broadcast %s, are not those attached (size or SHA-256 differs)", b.Attachment.Name, b.ID).
			WithCause(err)
	}
	return toolError(err)
}
