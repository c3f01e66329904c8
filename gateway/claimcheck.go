package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/calltoken"
	"github.com/mcpfn/mcpfn/claimcheck"
	"github.com/mcpfn/mcpfn/wire"
)

// The claim check at the gateway (issue 22, docs/decisions/0037): arguments
// too large for what the gateway is about to hand on go to the payloads
// bucket, and the envelope (or the task record) carries a reference; a
// result the function stored is read back, checked, and answered inline up
// to InlineResultBytes, or as MCP resource_links to presigned URLs of the
// bytes above it.

// Defaults of the claim check (docs/gateway.md, "Large payloads").
const (
	// defaultInlineResult is the largest answer the gateway builds from a
	// stored result (decision 0037): under go-sdk clients' 16 MiB cap on
	// one SSE event (a progress call's answer is one), with room for the
	// JSON-RPC framing and escapes; and, over a Function URL streaming
	// 2 MB/s after its first 6 MB, sent in about 3 s — inside the 5 s the
	// template's 25 s invoke timeout leaves of the gateway's 30 s.
	defaultInlineResult = 12 << 20
	// defaultLinkTTL is how long a presigned result link serves.
	defaultLinkTTL = 15 * time.Minute
	// maxLinkTTL: a presigned URL lives at most 7 days (SigV4), and never
	// longer than the credentials that signed it.
	maxLinkTTL = 7 * 24 * time.Hour
	// bodyFraming is what a request adds around a tool's arguments
	// (JSON-RPC, params, _meta) that a tool's declared MaxArgumentBytes
	// does not count.
	bodyFraming = 64 << 10
)

// ArgumentLimits are the sizes past which the gateway stores a call's
// arguments rather than send them, each below the limit it guards.
type ArgumentLimits struct {
	// Invoke: the envelope of a synchronous Invoke (buffered or streamed).
	// Default 5 MiB, under Lambda's 6 MB request payload.
	Invoke int
	// Event: the envelope of an asynchronous (task run) Invoke. Default
	// 768 KiB, under Lambda's 1 MB.
	Event int
	// Task: the params a task record keeps. Default 128 KiB: with the
	// function storing a task's result past 128 KiB too, the record stays
	// inside the task store's 350 KB (DynamoDB's 400 KB item).
	Task int
}

func (l ArgumentLimits) withDefaults() ArgumentLimits {
	if l.Invoke <= 0 {
		l.Invoke = 5 << 20
	}
	if l.Event <= 0 {
		l.Event = 768 << 10
	}
	if l.Task <= 0 {
		l.Task = 128 << 10
	}
	return l
}

// bodyLimit is the largest request body the gateway reads for a call of t:
// its declared arguments and their framing, never less than the default
// bound nor more than a Function URL request carries.
func (g *Gateway) bodyLimit(t *adapter.Tool) int64 {
	n := g.cfg.MaxBodyBytes
	if t == nil || t.MaxArgumentBytes() == 0 {
		return n
	}
	return max(n, min(int64(t.MaxArgumentBytes())+bodyFraming, adapter.MaxArgumentBytesLimit+bodyFraming))
}

// largestBody is the largest body any request may have: the declared
// tools' limits are checked once the message names its tool.
func (g *Gateway) largestBody() int64 {
	n := g.cfg.MaxBodyBytes
	for _, t := range g.tools {
		n = max(n, g.bodyLimit(t))
	}
	return n
}

// allowedBody reports whether a body of n bytes may carry msg: within the
// default bound always; past it only as one tools/call of a tool that
// declared arguments that large. It returns the limit that applies.
func (g *Gateway) allowedBody(msg []byte, n int64) (bool, int64) {
	if n <= g.cfg.MaxBodyBytes {
		return true, g.cfg.MaxBodyBytes
	}
	if isArray(msg) {
		return false, g.cfg.MaxBodyBytes
	}
	var m struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	if json.Unmarshal(msg, &m) != nil || m.Method != "tools/call" {
		return false, g.cfg.MaxBodyBytes
	}
	limit := g.bodyLimit(g.tools[m.Params.Name])
	return n <= limit, limit
}

// storeArguments stores args, in the canonical form the call token
// digests, under the tool's args prefix: the reference's SHA-256 is the
// token's argument digest.
func (g *Gateway) storeArguments(ctx context.Context, tool, callID string, args json.RawMessage) (*wire.ObjectRef, error) {
	ref, err := g.payloads.Put(ctx, wire.ArgsKey(tool, callID), claimcheck.JSON, calltoken.Canonical(args))
	if err != nil {
		return nil, err
	}
	return &ref, nil
}

// argsDigest is the call token digest of env's arguments when they are
// stored, "" when they travel inline.
func argsDigest(p *wire.EnvelopeParams) string {
	if p.ArgumentsRef == nil {
		return ""
	}
	sum, err := p.ArgumentsRef.Sum()
	if err != nil {
		return ""
	}
	return calltoken.DigestOfSHA256(sum)
}

// argumentsStoreFailed is the error of arguments that could not be stored.
func argumentsStoreFailed() *adapter.Error {
	return adapter.NewError(adapter.CodeUnavailable, "the call's arguments are too large to send to the tool inline, and the payloads bucket (S3) could not take them right now").
		WithHint("retry shortly; nothing was run")
}

// resolveError is a stored result the gateway could not serve, with what
// the caller is told.
type resolveError struct {
	code adapter.Code
	msg  string
	err  error
}

func (e *resolveError) Error() string { return e.msg + ": " + e.err.Error() }
func (e *resolveError) Unwrap() error { return e.err }

// resolveFailure maps a claim-check failure to what the caller is told.
func resolveFailure(err error) *resolveError {
	switch claimcheck.KindOf(err) {
	case claimcheck.Missing:
		return &resolveError{adapter.CodeUnavailable, "the tool's result expired or was deleted before the gateway could read it", err}
	case claimcheck.Tampered:
		return &resolveError{adapter.CodeInternal, "the tool's stored result is not the one its function recorded; it is not served", err}
	case claimcheck.Refused:
		return &resolveError{adapter.CodeInternal, "the tool function answered with a result reference the gateway does not accept", err}
	}
	var re *resolveError
	if errors.As(err, &re) {
		return re
	}
	return &resolveError{adapter.CodeUnavailable, "the tool's result is stored in the payloads bucket, which the gateway cannot read right now (S3 unavailable)", err}
}

// storedResult is a stored CallToolResult as the gateway reads it: its
// blocks undecoded, so that stored blocks can be told from MCP's.
type storedResult struct {
	Content           []json.RawMessage `json:"content"`
	StructuredContent json.RawMessage   `json:"structuredContent,omitempty"`
	IsError           bool              `json:"isError,omitempty"`
	Meta              mcp.Meta          `json:"_meta,omitempty"`
}

// resolveResult turns the reference a function answered with (or a task
// recorded) into the result the client gets. The reference must lie under
// prefix — the tool's results, of this call when the gateway knows it —
// in the payloads bucket; every object is checked against its SHA-256
// (read and hashed, or S3's checksum compared) and pinned to its version
// before it is answered or linked. Up to InlineResultBytes (its blobs
// base64-encoded) the result is answered inline, as the function would
// have answered it; above it, or when links are configured or a block
// asked for one, the blobs become resource_links to presigned URLs of
// their bytes, and a result too large even without them is one
// resource_link to its JSON.
func (g *Gateway) resolveResult(ctx context.Context, ref *wire.ObjectRef, prefix string) (*mcp.CallToolResult, error) {
	if g.payloads == nil {
		return nil, &resolveError{adapter.CodeInternal, "the tool function stored its result, and the gateway has no payloads bucket to read it from (MCPFN_PAYLOADS_BUCKET)", errors.New("no payloads bucket")}
	}
	if err := ref.Check(g.payloads.Bucket, prefix); err != nil {
		return nil, resolveFailure(&claimcheck.Error{Kind: claimcheck.Refused, Op: "check", Key: ref.Key, Err: err})
	}
	if ref.Size > g.cfg.InlineResultBytes {
		// Too large to read into an answer at all: one link to the
		// result's JSON (its stored blocks, if any, stay references).
		link, err := g.link(ctx, ref, "result.json")
		if err != nil {
			return nil, resolveFailure(err)
		}
		size := ref.Size
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ResourceLink{
			URI: link.url, Name: "result.json", MIMEType: claimcheck.JSON, Size: &size,
			Description: "The tool's result (an MCP CallToolResult as JSON), too large to answer inline.",
			Meta:        link.meta(""),
		}}}, nil
	}
	doc, err := g.payloads.Read(ctx, ref, g.cfg.InlineResultBytes)
	if err != nil {
		return nil, resolveFailure(err)
	}
	var sr storedResult
	if err := json.Unmarshal(doc, &sr); err != nil {
		return nil, resolveFailure(&claimcheck.Error{Kind: claimcheck.Refused, Op: "decode", Key: ref.Key, Err: err})
	}
	// Which blocks are stored, and how large the answer is with them inline.
	stored := make([]*wire.StoredBlock, len(sr.Content))
	inline := int64(len(doc))
	linkAll := g.cfg.AlwaysLink
	for i, raw := range sr.Content {
		var probe struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(raw, &probe) != nil || probe.Type != wire.StoredBlockType {
			continue
		}
		b := &wire.StoredBlock{}
		if err := json.Unmarshal(raw, b); err != nil {
			return nil, resolveFailure(&claimcheck.Error{Kind: claimcheck.Refused, Op: "decode", Key: ref.Key, Err: err})
		}
		// A blob stands next to its result, or nowhere the gateway reads.
		if err := b.Object.Check(g.payloads.Bucket, ref.Key+"."); err != nil {
			return nil, resolveFailure(&claimcheck.Error{Kind: claimcheck.Refused, Op: "check", Key: b.Object.Key, Err: err})
		}
		switch b.Block {
		case "image", "audio", "resource":
		default:
			return nil, resolveFailure(&claimcheck.Error{Kind: claimcheck.Refused, Op: "decode", Key: ref.Key, Err: fmt.Errorf("a stored block of type %q", b.Block)})
		}
		stored[i] = b
		inline += (b.Object.Size+2)/3*4 - int64(len(raw))
	}
	if inline > g.cfg.InlineResultBytes {
		linkAll = true
	}
	res := &mcp.CallToolResult{Content: make([]mcp.Content, 0, len(sr.Content)), IsError: sr.IsError, Meta: sr.Meta}
	if len(sr.StructuredContent) > 0 {
		res.StructuredContent = sr.StructuredContent
	}
	for i, raw := range sr.Content {
		var c mcp.Content
		switch b := stored[i]; {
		case b == nil:
			c, err = decodeBlock(raw)
			if err != nil {
				return nil, resolveFailure(&claimcheck.Error{Kind: claimcheck.Refused, Op: "decode", Key: ref.Key, Err: err})
			}
		case linkAll || b.Link:
			c, err = g.linkBlock(ctx, b)
		default:
			c, err = g.inlineBlock(ctx, b)
		}
		if err != nil {
			return nil, resolveFailure(err)
		}
		res.Content = append(res.Content, c)
	}
	return res, nil
}

// decodeBlock is one MCP content block as the go-sdk decodes it.
func decodeBlock(raw json.RawMessage) (mcp.Content, error) {
	var one mcp.CallToolResult
	doc := make([]byte, 0, len(raw)+16)
	doc = append(append(append(doc, `{"content":[`...), raw...), `]}`...)
	if err := json.Unmarshal(doc, &one); err != nil {
		return nil, err
	}
	if len(one.Content) != 1 {
		return nil, errors.New("not one content block")
	}
	return one.Content[0], nil
}

// inlineBlock reads a stored blob (hashing it) back into the block it was.
func (g *Gateway) inlineBlock(ctx context.Context, b *wire.StoredBlock) (mcp.Content, error) {
	data, err := g.payloads.Read(ctx, &b.Object, g.cfg.InlineResultBytes)
	if err != nil {
		return nil, err
	}
	switch b.Block {
	case "image":
		return &mcp.ImageContent{Data: data, MIMEType: b.MimeType}, nil
	case "audio":
		return &mcp.AudioContent{Data: data, MIMEType: b.MimeType}, nil
	}
	return &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: b.URI, MIMEType: b.MimeType, Blob: data}}, nil
}

// linkBlock is a stored blob as a resource_link to a presigned URL of its
// bytes, its version checked first.
func (g *Gateway) linkBlock(ctx context.Context, b *wire.StoredBlock) (mcp.Content, error) {
	name := b.Block
	if b.URI != "" {
		if base := path.Base(strings.TrimRight(b.URI, "/")); base != "." && base != "/" && base != "" {
			name = base
		}
	}
	link, err := g.link(ctx, &b.Object, name)
	if err != nil {
		return nil, err
	}
	size := b.Object.Size
	mime := b.MimeType
	if mime == "" {
		mime = b.Object.ContentType
	}
	return &mcp.ResourceLink{
		URI: link.url, Name: name, MIMEType: mime, Size: &size,
		Description: fmt.Sprintf("The tool's %s (%d bytes), to download.", b.Block, size),
		Meta:        link.meta(b.URI),
	}, nil
}

// presigned is a checked object's presigned URL and when it stops serving.
type presigned struct {
	url     string
	expires time.Time
}

// meta is what a resource_link says besides its URL: until when it
// serves, and the resource it stands for.
func (p presigned) meta(uri string) mcp.Meta {
	m := mcp.Meta{"io.mcpfn/expiresAt": p.expires.UTC().Format(time.RFC3339)}
	if uri != "" {
		m["io.mcpfn/resourceUri"] = uri
	}
	return m
}

// link checks ref's version (S3's SHA-256 of it against the reference)
// and presigns a GET of exactly that version.
func (g *Gateway) link(ctx context.Context, ref *wire.ObjectRef, filename string) (presigned, error) {
	if ref.VersionID == "" {
		// A URL without a version serves whatever the key holds when it
		// is fetched, not what was checked now.
		return presigned{}, &claimcheck.Error{Kind: claimcheck.Refused, Op: "presign", Key: ref.Key,
			Err: errors.New("the object names no version to pin (the payloads bucket must be versioned)")}
	}
	if err := g.payloads.Check(ctx, ref); err != nil {
		return presigned{}, err
	}
	url, err := g.payloads.Link(ctx, ref, g.cfg.ResultLinkTTL, safeFilename(filename))
	if err != nil {
		return presigned{}, err
	}
	return presigned{url: url, expires: g.now().Add(g.cfg.ResultLinkTTL)}, nil
}

// safeFilename keeps a Content-Disposition filename to characters that
// need no quoting.
func safeFilename(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("._-+", r):
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= 100 {
			break
		}
	}
	return b.String()
}

// resultPrefix is where a result of tool's call callID may be stored
// (callID "" for a task's, whose rounds each have a call id of their own).
func resultPrefix(tool, callID string) string {
	p := tool + "/" + wire.ResultsPrefix
	if callID != "" {
		p += callID + "/"
	}
	return p
}
