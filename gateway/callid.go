package gateway

import "github.com/modelcontextprotocol/go-sdk/mcp"

// MetaCallID is the _meta key under which every tools/call result the
// gateway answers carries the call's id: the id the function saw, the
// callId of the call's audit row (and of its span, mcpfn.call.id), and the
// id an error result names in its details. With it a client finds the
// audit row of any call it made, and a load test reconciles its calls with
// the audit table by id (docs/gateway.md).
//
// A CreateTaskResult (a call that became a task) carries no result yet:
// the task's rows carry its taskId.
const MetaCallID = "io.mcpfn/callId"

// withCallID is res with the call's id in its _meta, beside whatever _meta
// the function set (the gateway's id wins over a function's own value
// under the key). A nil res (a JSON-RPC error) stays nil.
func withCallID(res *mcp.CallToolResult, callID string) *mcp.CallToolResult {
	if res == nil || callID == "" {
		return res
	}
	meta := make(mcp.Meta, len(res.Meta)+1)
	for k, v := range res.Meta {
		meta[k] = v
	}
	meta[MetaCallID] = callID
	res.Meta = meta
	return res
}
