package handlers

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/smithy-go"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/mcpfn/mcpfn/adapter"
)

// The tools' names, as on tools/list and in each function's configuration.
const (
	ToolCreate = "broadcast_create"
	ToolGet    = "broadcast_get"
	ToolList   = "broadcast_list"
	ToolDelete = "broadcast_delete"
)

// ScopeWrite is the scope broadcast_delete requires of the verified caller.
const ScopeWrite = "broadcasts:write"

// DimensionEntity is the dimension every tool records: the broadcast's id
// (or, for broadcast_list, the channel listed), so the audit can answer "who
// touched this entity".
const DimensionEntity = "entityId"

// Input limits, advertised in the schemas.
const (
	maxChannelLen    = 64
	maxTextLen       = 4000
	defaultListLimit = 25
	maxListLimit     = 100
	channelRegexp    = `[a-z0-9][a-z0-9_-]*`
	idRegexp         = `[A-Z2-7]{26}`
)

// CreateInput is broadcast_create's input.
type CreateInput struct {
	Channel string `json:"channel" jsonschema:"channel to post to: lowercase letters, digits, '-' and '_'"`
	Text    string `json:"text" jsonschema:"the message"`
}

// CreateOutput is broadcast_create's output.
type CreateOutput struct {
	ID        string `json:"id" jsonschema:"the new broadcast's id"`
	CreatedAt string `json:"createdAt" jsonschema:"when it was posted (RFC 3339, UTC)"`
}

// GetInput is broadcast_get's input.
type GetInput struct {
	ID string `json:"id" jsonschema:"the broadcast's id, as broadcast_create returned it"`
}

// ListInput is broadcast_list's input.
type ListInput struct {
	Channel string `json:"channel" jsonschema:"the channel to list"`
	Cursor  string `json:"cursor,omitempty" jsonschema:"nextCursor of the previous page, passed back unchanged with the same channel; omit for the first page"`
	Limit   int    `json:"limit,omitempty" jsonschema:"how many broadcasts per page (default 25)"`
}

// ListOutput is broadcast_list's output.
type ListOutput struct {
	Items      []Broadcast `json:"items" jsonschema:"the channel's broadcasts, newest first"`
	NextCursor string      `json:"nextCursor,omitempty" jsonschema:"pass as cursor for the next page; absent on the last page"`
}

// DeleteInput is broadcast_delete's input.
type DeleteInput struct {
	ID string `json:"id" jsonschema:"the id of the broadcast to delete"`
}

// DeleteOutput is broadcast_delete's output: the broadcast as it was.
type DeleteOutput struct {
	Deleted Broadcast `json:"deleted" jsonschema:"the broadcast that was deleted"`
}

// The limits of the input schemas: refinements of the schemas inferred from
// the structs (descriptions from their tags), so that tools/list advertises
// the limits and the adapter enforces them before a handler runs.
var (
	channelSchema = func(p *jsonschema.Schema) {
		p.MinLength, p.MaxLength, p.Pattern = jsonschema.Ptr(1), jsonschema.Ptr(maxChannelLen), "^"+channelRegexp+"$"
	}
	idSchema = func(p *jsonschema.Schema) {
		p.Pattern = "^" + idRegexp + "$"
	}
)

// Each tool is declared once, below, with adapter.Declare: its definition
// (what tools/list shows, and what its function needs on AWS: the table
// actions its handler calls, from which `mcpfn template` generates its role)
// and its handler, a method of the Store it needs. A function's main binds
// its tool to a store built from its environment:
//
//	func main() { adapter.Serve(handlers.Create, handlers.StoreFromEnv) }

// broadcastsTable is the demo's table (template.yaml's BroadcastsTable),
// read through TableEnv.
func broadcastsTable(index string, actions ...string) []adapter.TableAccess {
	return []adapter.TableAccess{{Table: "BroadcastsTable", Env: TableEnv, Index: index, Actions: actions}}
}

// Catalog returns every tool's definition, unbound, in name order: the
// application as tools/list shows it, for the demo's own tests.
func Catalog() []*adapter.Tool {
	return []*adapter.Tool{Attach.Tool(), GetAttachment.Tool(), Create.Tool(), Delete.Tool(), Digest.Tool(), Export.Tool(), Get.Tool(), List.Tool()}
}

// tools binds every tool to store, in Catalog order.
func tools(store *Store) []*adapter.Tool {
	return []*adapter.Tool{Attach.Bind(store), GetAttachment.Bind(store), Create.Bind(store), Delete.Bind(store), Digest.Bind(store), Export.Bind(store), Get.Bind(store), List.Bind(store)}
}

// Create is broadcast_create. Its conditional put never overwrites; a
// retried create whose conditional failure carried no item reads it back.
var Create = adapter.Declare(adapter.ToolDef[CreateInput, CreateOutput]{
	Name:  ToolCreate,
	Title: "Post a broadcast",
	Description: "Posts a message to a channel and returns the new broadcast's id. " +
		"Retrying the same call returns the same id; it never posts twice.",
	RefineInput: adapter.Refine{
		"channel": channelSchema,
		"text": func(p *jsonschema.Schema) {
			p.MinLength, p.MaxLength = jsonschema.Ptr(1), jsonschema.Ptr(maxTextLen)
		},
	},
	Tables: broadcastsTable("", "PutItem", "GetItem"),
}, (*Store).create)

func (store *Store) create(ctx context.Context, call *adapter.Call, in CreateInput) (CreateOutput, error) {
	b := Broadcast{ID: newID(call), Channel: in.Channel, Text: in.Text, CreatedAt: store.stamp()}
	call.SetDimension(DimensionEntity, b.ID)
	err := store.Put(ctx, b)
	var exists *ExistsError
	if errors.As(err, &exists) {
		// The id comes from the call id, so a taken id is almost
		// always this call's own earlier attempt: answer as it did.
		prev := exists.Existing
		if prev == nil {
			p, gerr := store.Get(ctx, b.ID)
			if gerr != nil {
				return CreateOutput{}, toolError(gerr)
			}
			prev = &p
		}
		if prev.Channel == in.Channel && prev.Text == in.Text {
			return CreateOutput{ID: prev.ID, CreatedAt: prev.CreatedAt}, nil
		}
		return CreateOutput{}, adapter.NewError(adapter.CodeConflict, "this call id was already used to post a different broadcast").
			WithHint("send a new call instead of retrying this one with changed arguments")
	}
	if err != nil {
		return CreateOutput{}, toolError(err)
	}
	return CreateOutput{ID: b.ID, CreatedAt: b.CreatedAt}, nil
}

// Get is broadcast_get.
var Get = adapter.Declare(adapter.ToolDef[GetInput, Broadcast]{
	Name:        ToolGet,
	Title:       "Read a broadcast",
	Description: "Returns one broadcast by id.",
	ReadOnly:    true,
	Idempotent:  true,
	RefineInput: adapter.Refine{"id": idSchema},
	Tables:      broadcastsTable("", "GetItem"),
}, (*Store).get)

func (store *Store) get(ctx context.Context, call *adapter.Call, in GetInput) (Broadcast, error) {
	call.SetDimension(DimensionEntity, in.ID)
	b, err := store.Get(ctx, in.ID)
	if err != nil {
		return Broadcast{}, toolError(err)
	}
	return b, nil
}

// List is broadcast_list: it queries the byChannel index, never the table.
var List = adapter.Declare(adapter.ToolDef[ListInput, ListOutput]{
	Name:  ToolList,
	Title: "List a channel's broadcasts",
	Description: "Lists a channel's broadcasts, newest first, a page at a time. " +
		"Pass nextCursor back as cursor for the next page. " +
		"A broadcast posted a moment ago may not be listed yet; broadcast_get by id always sees it.",
	ReadOnly:   true,
	Idempotent: true,
	RefineInput: adapter.Refine{
		"channel": channelSchema,
		"cursor":  func(p *jsonschema.Schema) { p.MaxLength = jsonschema.Ptr(maxCursorLen) },
		"limit": func(p *jsonschema.Schema) {
			p.Minimum, p.Maximum = jsonschema.Ptr(1.0), jsonschema.Ptr(float64(maxListLimit))
			p.Default = json.RawMessage(fmt.Sprint(defaultListLimit))
		},
	},
	Tables: broadcastsTable("byChannel", "Query"),
}, (*Store).list)

func (store *Store) list(ctx context.Context, call *adapter.Call, in ListInput) (ListOutput, error) {
	call.SetDimension(DimensionEntity, in.Channel)
	limit := in.Limit
	if limit == 0 {
		limit = defaultListLimit
	}
	page, err := store.List(ctx, in.Channel, limit, in.Cursor)
	if err != nil {
		return ListOutput{}, toolError(err)
	}
	return ListOutput(page), nil
}

// Delete is broadcast_delete. It is destructive (the audit writes its row
// ahead of the handler) and requires ScopeWrite. A broadcast's attachment
// goes with it.
var Delete = adapter.Declare(adapter.ToolDef[DeleteInput, DeleteOutput]{
	Name:        ToolDelete,
	Title:       "Delete a broadcast",
	Description: "Deletes one broadcast by id, with its attachment, and returns it as it was. Requires scope broadcasts:write.",
	Destructive: true,
	// Deleting again changes nothing more (it answers NOT_FOUND).
	Idempotent:  true,
	Scopes:      []string{ScopeWrite},
	RefineInput: adapter.Refine{"id": idSchema},
	// A conditional delete returning the old item: DeleteItem only.
	Tables: broadcastsTable("", "DeleteItem"),
	// A delete marker over the attachment's object, named by the old item.
	Buckets: attachmentsBucket("DeleteObject"),
}, (*Store).delete)

func (store *Store) delete(ctx context.Context, call *adapter.Call, in DeleteInput) (DeleteOutput, error) {
	call.SetDimension(DimensionEntity, in.ID)
	b, err := store.Delete(ctx, in.ID)
	if err != nil {
		return DeleteOutput{}, toolError(err)
	}
	if b.Attachment != nil {
		store.dropAttachmentObject(ctx, call, b.Attachment.Key)
	}
	return DeleteOutput{Deleted: b}, nil
}

// idEncoding is base32 without padding: 16 bytes become 26 characters of
// [A-Z2-7], safe in URLs, logs and case-insensitive contexts.
var idEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// newID derives a broadcast id from the call id, which the adapter keeps
// stable across retries of one call (see the package doc). Without a call id
// it is random.
func newID(call *adapter.Call) string { return derivedID("mcpfn/broadcast-id/v1", call) }

// derivedID is an id of 26 characters derived from the call id under
// domain (so that ids of different kinds never coincide), random without a
// call id.
func derivedID(domain string, call *adapter.Call) string {
	var b [16]byte
	if call != nil && call.ID != "" {
		sum := sha256.Sum256([]byte(domain + "\x00" + call.ID))
		copy(b[:], sum[:])
	} else {
		_, _ = rand.Read(b[:])
	}
	return idEncoding.EncodeToString(b[:])
}

// toolError turns a store error into what the caller should see. Domain
// failures become *adapter.Error; throttling and deadlines become retryable
// codes; anything else is returned as is, and the adapter scrubs it to
// INTERNAL_SERVER_ERROR for the caller while the audit keeps it whole.
func toolError(err error) error {
	var apiErr smithy.APIError
	var bucketErr *bucketError
	switch {
	case errors.Is(err, ErrNotFound):
		return adapter.NewError(adapter.CodeNotFound, "no broadcast with this id").WithCause(err)
	case errors.Is(err, ErrNoAttachment):
		return adapter.NewError(adapter.CodeNotFound, "this broadcast has no attachment").
			WithHint("attach a file with broadcast_attach").WithCause(err)
	case errors.Is(err, ErrBadCursor):
		return adapter.NewError(adapter.CodeValidation, "invalid cursor").
			WithDetails([]adapter.Issue{{Path: "/cursor", Message: err.Error()}}).
			WithHint("pass nextCursor back unchanged, with the same channel; omit cursor to start from the first page").
			WithCause(err)
	case errors.Is(err, context.DeadlineExceeded):
		return adapter.NewError(adapter.CodeTimeout, "the broadcasts table did not answer in time").WithCause(err)
	case errors.As(err, &bucketErr) && errors.As(err, &apiErr) && apiErr.ErrorCode() == "SlowDown":
		return adapter.NewError(adapter.CodeRateLimited, "the attachments bucket is busy").
			WithHint("retry after a short wait").WithCause(err)
	case errors.As(err, &bucketErr):
		// Unreachable or refusing: the bucket's error code, never its
		// message (which names buckets and keys), says which.
		why := "could not be reached"
		if errors.As(err, &apiErr) {
			why = "refused the request (" + apiErr.ErrorCode() + ")"
		}
		return adapter.NewError(adapter.CodeUnavailable, "the attachments bucket "+why).
			WithHint("retry the call").WithCause(err)
	case errors.As(err, &apiErr) && throttled[apiErr.ErrorCode()]:
		return adapter.NewError(adapter.CodeRateLimited, "the broadcasts table is busy").
			WithHint("retry after a short wait").WithCause(err)
	}
	return err
}

// throttled are the DynamoDB error codes that mean "slow down" (the SDK has
// already retried them with backoff by the time a handler sees one).
var throttled = map[string]bool{
	"ProvisionedThroughputExceededException": true,
	"ThrottlingException":                    true,
	"RequestLimitExceeded":                   true,
}
