package adapter

import (
	"encoding/json"
	"fmt"
)

// Content is a tool output made of MCP content blocks — text, images, audio,
// embedded resources — rather than one JSON value. A handler returns it (as its
// Out type: [Define] recognises it) when what the model should read is
// not a JSON document: a chart, a recording, a file. It keeps handlers free of
// the go-sdk: the adapter writes the blocks in MCP's wire shape.
//
// Structured, when set, is the result's structuredContent. It must match the
// tool's output schema, which exists only when ToolDef.OutputSchema gives one:
// a Content tool has no schema to infer (Content describes blocks, not data),
// and advertising one would oblige every result to carry structured content.
type Content struct {
	Blocks     []Block
	Structured any
}

// Block is one content block. Build it with [Text], [Image], [Audio],
// [TextResource] or [BlobResource]; the zero Block is an empty text block.
type Block struct {
	kind     string // text | image | audio | resource
	text     string
	data     []byte
	mimeType string
	uri      string
	link     bool // AsLink
}

// Text is a text block.
func Text(s string) Block { return Block{kind: "text", text: s} }

// Image is an image block; data is the raw image (base64-encoded on the wire).
func Image(data []byte, mimeType string) Block {
	return Block{kind: "image", data: data, mimeType: mimeType}
}

// Audio is an audio block; data is the raw audio (base64-encoded on the wire).
func Audio(data []byte, mimeType string) Block {
	return Block{kind: "audio", data: data, mimeType: mimeType}
}

// TextResource embeds a text resource (a file, a document) identified by uri.
func TextResource(uri, mimeType, text string) Block {
	return Block{kind: "resource", uri: uri, mimeType: mimeType, text: text}
}

// BlobResource embeds a binary resource identified by uri (base64-encoded on
// the wire).
func BlobResource(uri, mimeType string, data []byte) Block {
	// A non-nil slice keeps an empty blob a blob rather than text.
	if data == nil {
		data = []byte{}
	}
	return Block{kind: "resource", uri: uri, mimeType: mimeType, data: data}
}

// AsLink asks that a binary block (an image, audio, a blob resource) reach
// the client as an MCP resource_link to a short-lived URL of its bytes,
// whatever their size, instead of inline: for a file the client should
// download rather than read. It takes effect on a call the mcpfn gateway
// forwarded to a function with the payloads bucket (the bytes are stored
// there and the gateway presigns the link); elsewhere the block is
// answered inline as usual. A text block is unchanged.
func (b Block) AsLink() Block {
	b.link = b.data != nil
	return b
}

// wireBlock is a Block in MCP's ContentBlock shape. []byte marshals as
// base64, which is what MCP's data and blob fields carry.
type wireBlock struct {
	Type     string        `json:"type"`
	Text     *string       `json:"text,omitempty"`
	Data     []byte        `json:"data,omitempty"`
	MimeType string        `json:"mimeType,omitempty"`
	Resource *wireResource `json:"resource,omitempty"`
}

type wireResource struct {
	URI      string  `json:"uri"`
	MimeType string  `json:"mimeType,omitempty"`
	Text     *string `json:"text,omitempty"`
	Blob     *[]byte `json:"blob,omitempty"`
}

func (b Block) wire() wireBlock {
	switch b.kind {
	case "image", "audio":
		// An empty image is still an image: MCP requires the field.
		data := b.data
		if data == nil {
			data = []byte{}
		}
		return wireBlock{Type: b.kind, Data: data, MimeType: b.mimeType}
	case "resource":
		r := &wireResource{URI: b.uri, MimeType: b.mimeType}
		if b.data != nil {
			r.Blob = &b.data
		} else {
			r.Text = &b.text
		}
		return wireBlock{Type: "resource", Resource: r}
	default:
		return wireBlock{Type: "text", Text: &b.text}
	}
}

// contentOf reports whether a handler's output is Content.
func contentOf(output any) (*Content, bool) {
	switch c := output.(type) {
	case Content:
		return &c, true
	case *Content:
		return c, c != nil
	}
	return nil, false
}

// checkedContent is Content whose structured value passed step 7, ready to
// be rendered (renderContent, claimcheck.go) once it is known whether the
// result is answered inline or stored.
type checkedContent struct {
	Blocks     []Block
	structured json.RawMessage
}

// checkContent is step 7 for Content: Structured checked against the output
// schema when the tool has one.
func (f *Function) checkContent(c *Content) (*checkedContent, error) {
	out := &checkedContent{Blocks: c.Blocks}
	switch {
	case c.Structured != nil:
		raw, err := json.Marshal(c.Structured)
		if err != nil {
			return nil, NewError(CodeInternal, "Internal server error").WithCause(fmt.Errorf("structured content cannot be marshalled: %w", err))
		}
		if f.tool.outResolved != nil {
			var generic any
			if err := json.Unmarshal(raw, &generic); err != nil {
				return nil, NewError(CodeInternal, "Internal server error").WithCause(err)
			}
			if err := f.tool.outResolved.Validate(generic); err != nil {
				return nil, NewError(CodeInternal, "Internal server error").WithCause(fmt.Errorf("structured content does not match the output schema: %w", err))
			}
		}
		out.structured = raw
	case f.tool.outResolved != nil:
		// The tool advertised an output schema; MCP then requires
		// structured content on every success.
		return nil, NewError(CodeInternal, "Internal server error").WithCause(fmt.Errorf("tool %q has an output schema but its Content has no Structured value (a Content tool with an output schema must set Structured)", f.tool.name))
	}
	return out, nil
}
