package wire

import "encoding/json"

// RPCError is a JSON-RPC 2.0 error object.
type RPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// JSON-RPC 2.0 error codes.
const (
	RPCParseError     = -32700
	RPCInvalidRequest = -32600
	RPCMethodNotFound = -32601
	RPCInvalidParams  = -32602
	RPCInternalError  = -32603
)

// RPCResponse is a JSON-RPC 2.0 response: exactly one of Result or Error.
// ID is the request's id, or JSON null where it could not be read.
type RPCResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

// NewRPCResponse returns the "2.0" response to the request with id (null
// when id is empty) carrying result or rpcErr.
func NewRPCResponse(id, result json.RawMessage, rpcErr *RPCError) RPCResponse {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	return RPCResponse{JSONRPC: "2.0", ID: id, Result: result, Error: rpcErr}
}

// RPCErrorJSON is the JSON of an error response to the request with id.
func RPCErrorJSON(id json.RawMessage, code int, message string) []byte {
	b, _ := json.Marshal(NewRPCResponse(id, nil, &RPCError{Code: code, Message: message}))
	return b
}
