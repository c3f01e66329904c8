package adapter

import (
	"bytes"
	stdjson "encoding/json"
	"fmt"
)

// Listing is a tool as MCP's tools/list describes it: the fields of the
// specification's Tool that mcpfn fills, with the names, order and
// omissions of the MCP go-sdk's mcp.Tool, so that its JSON is the JSON
// that type gives (package mcptool turns it into one, for a server built
// on the go-sdk). The adapter keeps its own type so that a tool function
// does not link the go-sdk for its one tools/list answer
// (docs/benchmarks.md: about half a millisecond of package init at every
// cold start and 0.9 MB of bootstrap; decision 0043).
type Listing struct {
	Meta         map[string]any      `json:"_meta,omitempty"`
	Annotations  *ListingAnnotations `json:"annotations,omitempty"`
	Description  string              `json:"description,omitempty"`
	InputSchema  stdjson.RawMessage  `json:"inputSchema"`
	Name         string              `json:"name"`
	OutputSchema stdjson.RawMessage  `json:"outputSchema,omitempty"`
	Title        string              `json:"title,omitempty"`
}

// ListingAnnotations are a [Listing]'s behaviour hints (MCP's
// ToolAnnotations).
type ListingAnnotations struct {
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  bool   `json:"idempotentHint"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
	ReadOnlyHint    bool   `json:"readOnlyHint"`
	Title           string `json:"title,omitempty"`
}

// Listing returns the tool as MCP's tools/list describes it. The gateway
// and a function's own tools/list both list it, so the two cannot drift.
// Its schemas are JSON: a forwarded tool's as they were written, a defined
// tool's as its schema values marshal.
func (t *Tool) Listing() (Listing, error) {
	destructive, openWorld := t.destructive, t.ow
	l := Listing{
		Name:        t.name,
		Title:       t.title,
		Description: t.description,
		Annotations: &ListingAnnotations{
			Title:           t.title,
			ReadOnlyHint:    t.readOnly,
			DestructiveHint: &destructive,
			IdempotentHint:  t.idem,
			OpenWorldHint:   &openWorld,
		},
	}
	switch {
	case t.fwd != nil:
		l.InputSchema = bytes.Clone(t.fwd.in)
		if t.fwd.out != nil {
			l.OutputSchema = bytes.Clone(t.fwd.out)
		}
	default:
		in, err := stdjson.Marshal(t.inSchema)
		if err != nil {
			return Listing{}, fmt.Errorf("adapter: tool %s: input schema: %w", t.name, err)
		}
		l.InputSchema = in
		// A Content tool may have no output schema.
		if t.outSchema != nil {
			out, err := stdjson.Marshal(t.outSchema)
			if err != nil {
				return Listing{}, fmt.Errorf("adapter: tool %s: output schema: %w", t.name, err)
			}
			l.OutputSchema = out
		}
	}
	if len(t.scopes) > 0 {
		l.Meta = map[string]any{"mcpfn/scopes": t.Scopes()}
	}
	return l, nil
}
