package adapter

import (
	json "github.com/segmentio/encoding/json"

	"github.com/mcpfn/mcpfn/wire"
)

// rpcRequest is a JSON-RPC 2.0 request or notification.
type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

func decodeBatch(payload []byte, limits Limits) invocation {
	var items []json.RawMessage
	if err := json.Unmarshal(payload, &items); err != nil {
		d := decodeFailure(SourceJSONRPC, wire.RPCParseError, CodeBadRequest, "malformed JSON-RPC batch: %s", jsonErrorText(err))
		return invocation{source: SourceJSONRPC, calls: []*decoded{d}}
	}
	inv := invocation{source: SourceJSONRPC, batch: true}
	switch {
	case len(items) == 0:
		inv.calls = []*decoded{decodeFailure(SourceJSONRPC, wire.RPCInvalidRequest, CodeBadRequest, "empty JSON-RPC batch")}
		inv.batch = false
	case len(items) > limits.MaxBatch:
		inv.calls = []*decoded{decodeFailure(SourceJSONRPC, wire.RPCInvalidRequest, CodeBadRequest,
			"the JSON-RPC batch has %d requests; this function accepts at most %d", len(items), limits.MaxBatch)}
		inv.batch = false
	default:
		for _, it := range items {
			inv.calls = append(inv.calls, decodeJSONRPC(it))
		}
	}
	return inv
}

func decodeJSONRPC(payload []byte) *decoded {
	var req rpcRequest
	if err := json.Unmarshal(payload, &req); err != nil {
		d := decodeFailure(SourceJSONRPC, wire.RPCInvalidRequest, CodeBadRequest, "malformed JSON-RPC request: %s", jsonErrorText(err))
		d.rpcID = req.ID
		return d
	}
	return decodedJSONRPC(req, nil)
}

// decodedJSONRPC types a JSON-RPC request; params is its tools/call params
// when the caller decoded them already.
func decodedJSONRPC(req rpcRequest, params *wire.EnvelopeParams) *decoded {
	if req.JSONRPC != "2.0" || req.Method == "" {
		d := decodeFailure(SourceJSONRPC, wire.RPCInvalidRequest, CodeBadRequest, "a JSON-RPC request needs \"jsonrpc\":\"2.0\" and a method")
		d.rpcID = req.ID
		return d
	}
	d := &decoded{source: SourceJSONRPC, method: req.Method, rpcID: req.ID, isNotify: len(req.ID) == 0}
	if req.Method != "tools/call" {
		// tools/list, initialize, ping and notifications are answered
		// by the function itself; they are not tool calls.
		var meta map[string]any
		if params != nil {
			meta = params.Meta
		} else {
			meta = paramsMeta(req.Params)
		}
		d.mcp = mcpMetaFrom(req.Method, "", meta)
		return d
	}
	if params == nil {
		if len(req.Params) == 0 {
			d.err, d.rpcCode = NewError(CodeBadRequest, "tools/call needs params with a tool name"), wire.RPCInvalidParams
			return d
		}
		params = &wire.EnvelopeParams{}
		if err := json.Unmarshal(req.Params, params); err != nil {
			d.err, d.rpcCode = Errorf(CodeBadRequest, "malformed tools/call params: %s", jsonErrorText(err)), wire.RPCInvalidParams
			return d
		}
	}
	p := params
	d.toolName, d.args, d.meta = p.Name, p.Arguments, p.Meta
	d.inputResponses, d.requestState = p.InputResponses, p.RequestState
	d.mcp = mcpMetaFrom(req.Method, p.Name, p.Meta)
	d.mcp.JSONRPCID = req.ID
	d.mcp.Round = roundOf(p.RequestState, p.InputResponses)
	if d.mcp.Era == EraUnknown {
		// A JSON-RPC request without a modern _meta follows an
		// initialize-era protocol; which version, only its session knew.
		d.mcp.Era = EraLegacy
	}
	if p.Name == "" {
		d.err, d.rpcCode = NewError(CodeBadRequest, "tools/call params name no tool"), wire.RPCInvalidParams
	}
	return d
}

func paramsMeta(params json.RawMessage) map[string]any {
	var p struct {
		Meta map[string]any `json:"_meta"`
	}
	_ = json.Unmarshal(params, &p)
	return p.Meta
}
