package agentcore

import "encoding/json"

// Versions of the interceptor event formats this package speaks.
const (
	InputVersion  = "1.0"
	OutputVersion = "1.0"
)

// Input is the event AgentCore Gateway sends a REQUEST interceptor for an MCP
// target.
type Input struct {
	InterceptorInputVersion string   `json:"interceptorInputVersion"`
	MCP                     InputMCP `json:"mcp"`
}

// InputMCP holds the request, raw and parsed.
type InputMCP struct {
	RawGatewayRequest *RawRequest    `json:"rawGatewayRequest,omitempty"`
	GatewayRequest    GatewayRequest `json:"gatewayRequest"`
}

// RawRequest is the request body as the client sent it.
type RawRequest struct {
	Body string `json:"body"`
}

// GatewayRequest is the parsed request. Headers are present only when the
// interceptor is configured with PassRequestHeaders: true.
type GatewayRequest struct {
	Path       string            `json:"path,omitempty"`
	HTTPMethod string            `json:"httpMethod,omitempty"`
	Headers    map[string]string `json:"headers,omitempty"`
	Body       json.RawMessage   `json:"body,omitempty"`
}

// Output is the interceptor's answer. With TransformedGatewayResponse set,
// the gateway answers the client with it and calls no target.
type Output struct {
	InterceptorOutputVersion string    `json:"interceptorOutputVersion"`
	MCP                      OutputMCP `json:"mcp"`
}

// OutputMCP is the request to forward, or the response to answer with.
type OutputMCP struct {
	TransformedGatewayRequest  *TransformedRequest  `json:"transformedGatewayRequest,omitempty"`
	TransformedGatewayResponse *TransformedResponse `json:"transformedGatewayResponse,omitempty"`
}

// TransformedRequest replaces the request the target gets.
type TransformedRequest struct {
	Headers map[string]string `json:"headers,omitempty"`
	Body    json.RawMessage   `json:"body"`
}

// TransformedResponse is the gateway's answer to the client.
type TransformedResponse struct {
	StatusCode int               `json:"statusCode"`
	Headers    map[string]string `json:"headers,omitempty"`
	Body       json.RawMessage   `json:"body"`
}
