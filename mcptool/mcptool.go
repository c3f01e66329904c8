// Package mcptool gives an mcpfn tool as the MCP go-sdk's *mcp.Tool, for an
// MCP server built on the go-sdk (mcpfn's gateway, the local AgentCore
// stand-in, or a server of your own) to list and route. A tool function
// does not need it and does not link the go-sdk: the adapter lists its tool
// itself ([adapter.Tool.Listing]), with the same JSON.
package mcptool

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/adapter"
)

// Of returns t as the go-sdk's tool: [adapter.Tool.Listing] field for
// field, its schemas as JSON bytes. A server marshals bytes by copying them
// (the go-sdk marshals a tool's input schema on every tools/call, and a
// schema value is marshalled by reflection each time), and its tools/list
// is the JSON the function's own tools/list answers.
func Of(t *adapter.Tool) (*mcp.Tool, error) {
	l, err := t.Listing()
	if err != nil {
		return nil, err
	}
	mt := &mcp.Tool{
		Name:        l.Name,
		Title:       l.Title,
		Description: l.Description,
		InputSchema: json.RawMessage(l.InputSchema),
	}
	if l.OutputSchema != nil {
		mt.OutputSchema = json.RawMessage(l.OutputSchema)
	}
	if a := l.Annotations; a != nil {
		mt.Annotations = &mcp.ToolAnnotations{
			Title:           a.Title,
			ReadOnlyHint:    a.ReadOnlyHint,
			DestructiveHint: a.DestructiveHint,
			IdempotentHint:  a.IdempotentHint,
			OpenWorldHint:   a.OpenWorldHint,
		}
	}
	if l.Meta != nil {
		mt.Meta = mcp.Meta(l.Meta)
	}
	return mt, nil
}
