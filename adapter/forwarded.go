package adapter

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// A forwarded tool is what a front that forwards every call to the tool's
// own function — the gateway, the AgentCore interceptor — builds from a
// catalog entry. Such a front lists the tool, checks its scopes and limits,
// and never validates an argument or a result: the function does, with its
// own copy of the schemas. Decoding, ordering and resolving the schemas was
// most of a gateway's cold start (issue 21: ~0.75 ms of CPU per catalog
// tool, the first one dearer still), so a forwarded tool keeps them as the
// JSON they were written in and decodes them only if something asks for
// them as schemas.

// forwarded is a forwarded tool's schemas as JSON.
type forwarded struct {
	// in and out are the schemas compacted and HTML-escaped: the bytes
	// json.Marshal writes of the decoded schemas (out nil: none).
	in, out []byte
	// full is the tool built from the whole decoded declaration
	// (ToolFromDeclaration), on first use; nil if its schemas do not
	// decode or resolve.
	full func() *Tool
}

// forwardedDecl is a declaration with its schemas left as JSON: the
// outer fields hide the embedded ones of the same JSON names.
type forwardedDecl struct {
	plainDeclaration
	InputSchema  stdjson.RawMessage `json:"inputSchema"`
	OutputSchema stdjson.RawMessage `json:"outputSchema,omitempty"`
}

// plainDeclaration is Declaration without its UnmarshalJSON, which decodes
// the schemas.
type plainDeclaration Declaration

// ForwardedTool builds, from the JSON of a tool's declaration (a catalog
// entry's "tool"), the tool a front that forwards its calls serves: its
// name, annotations, scopes, task support, limits and needs, checked as
// [ToolFromDeclaration] checks them, and its schemas as the JSON they were
// written in, which must be JSON objects, the input's of type "object".
// [Tool.Listing] lists them as they are — as ToolFromDeclaration's tool
// lists them, for a declaration `mcpfn template` wrote. They are decoded
// and resolved only when asked for as schemas: [Tool.InputSchema],
// [Tool.OutputSchema] and [Tool.Declaration] (nil schemas if they do not
// decode or resolve), or served with [New], which panics then.
func ForwardedTool(declaration []byte) (*Tool, error) {
	var d forwardedDecl
	if err := stdjson.Unmarshal(declaration, &d); err != nil {
		return nil, fmt.Errorf("adapter: declaration: %w", err)
	}
	c, err := check(d.Name, d.TaskSupport, d.TaskAfterInput, d.MaxArgumentBytes, d.Tables, d.Buckets,
		time.Duration(d.TimeoutSeconds)*time.Second, d.MemoryMB)
	if err != nil {
		return nil, err
	}
	in, err := schemaJSON(d.InputSchema)
	switch {
	case err != nil:
		return nil, fmt.Errorf("adapter: tool %q input schema: %w", d.Name, err)
	case in == nil:
		return nil, fmt.Errorf("adapter: declaration of %q has no input schema", d.Name)
	}
	var typ struct {
		Type any `json:"type"`
	}
	if err := stdjson.Unmarshal(in, &typ); err != nil || typ.Type != "object" {
		return nil, fmt.Errorf("adapter: tool %q input must be an object type (MCP arguments are an object), got %v", d.Name, typ.Type)
	}
	out, err := schemaJSON(d.OutputSchema)
	if err != nil {
		return nil, fmt.Errorf("adapter: tool %q output schema: %w", d.Name, err)
	}
	declaration = bytes.Clone(declaration)
	return &Tool{
		name: d.Name, title: d.Title, description: d.Description,
		readOnly: d.ReadOnly, destructive: d.Destructive, idem: d.Idempotent, ow: d.OpenWorld,
		scopes: append([]string(nil), d.Scopes...), tasks: c.tasks, taskAfterInput: d.TaskAfterInput, maxArgs: d.MaxArgumentBytes,
		deploy: c.deploy,
		fwd: &forwarded{in: in, out: out, full: sync.OnceValue(func() *Tool {
			var full Declaration
			if stdjson.Unmarshal(declaration, &full) != nil {
				return nil
			}
			t, err := ToolFromDeclaration(full)
			if err != nil {
				return nil
			}
			return t
		})},
	}, nil
}

// schemaJSON is raw, a schema's JSON, compacted and HTML-escaped as
// json.Marshal writes it; nil for none (absent or null).
func schemaJSON(raw []byte) ([]byte, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] != '{' {
		return nil, errors.New("not a JSON object")
	}
	var compact, escaped bytes.Buffer
	if err := stdjson.Compact(&compact, raw); err != nil {
		return nil, err
	}
	stdjson.HTMLEscape(&escaped, compact.Bytes())
	return escaped.Bytes(), nil
}

// schemas is the tool that holds t's decoded schemas: t itself, or a
// forwarded tool's whole declaration, decoded now; nil when that does not
// decode or resolve.
func (t *Tool) schemas() *Tool {
	if t.fwd == nil {
		return t
	}
	return t.fwd.full()
}
