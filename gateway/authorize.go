package gateway

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/adapter"
)

// Authorization happens twice (DESIGN §7): here, before any invoke, so a
// caller never reaches a function it may not call and tools/list shows what
// it may call; and again in the function, which trusts nothing the gateway
// did not sign.

// authorizeTool returns why id may not call t, or nil. It mirrors the
// function's own gate: a tool that requires scopes needs a verified caller
// holding all of them.
// callID, when set, goes in the details, as in every gateway failure.
func authorizeTool(t *adapter.Tool, id *adapter.Identity, callID string) *adapter.Error {
	scopes := t.Scopes()
	if len(scopes) == 0 {
		return nil
	}
	details := map[string]any{}
	if callID != "" {
		details["callId"] = callID
	}
	if id == nil {
		e := adapter.NewError(adapter.CodeUnauthorized, "this tool requires a verified caller").
			WithHint("call it with credentials (a bearer token or a signed request)")
		if len(details) > 0 {
			e = e.WithDetails(details)
		}
		return e
	}
	var missing []string
	for _, s := range scopes {
		if !id.HasScope(s) {
			missing = append(missing, s)
		}
	}
	if len(missing) > 0 {
		details["missingScopes"] = missing
		return adapter.NewError(adapter.CodeForbidden, "the caller lacks the scope(s) this tool requires").
			WithDetails(details)
	}
	return nil
}

// filterToolsList is receiving middleware: in ToolsHide mode a tools/list
// answer leaves out the tools the request's caller may not call.
func (g *Gateway) filterToolsList(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method != "tools/list" || err != nil || g.cfg.ToolsList != ToolsHide {
			return res, err
		}
		list, ok := res.(*mcp.ListToolsResult)
		if !ok {
			return res, err
		}
		var id *adapter.Identity
		if ri, _ := ctx.Value(requestInfoKey{}).(*requestInfo); ri != nil {
			id = ri.identity
		}
		kept := make([]*mcp.Tool, 0, len(list.Tools))
		for _, t := range list.Tools {
			if tool := g.tools[t.Name]; tool == nil || authorizeTool(tool, id, "") == nil {
				kept = append(kept, t)
			}
		}
		filtered := *list
		filtered.Tools = kept
		return &filtered, nil
	}
}
