package adapter

import (
	"encoding/json"

	"github.com/mcpfn/mcpfn/wire"
)

// Source names the invocation format a call arrived in.
type Source string

const (
	SourceEnvelope  Source = "envelope"  // from the mcpfn gateway
	SourceAgentCore Source = "agentcore" // an Amazon Bedrock AgentCore Gateway Lambda target
	SourceJSONRPC   Source = "jsonrpc"   // a JSON-RPC 2.0 request invoking the function directly
	SourceUnknown   Source = "unknown"   // a payload in none of the formats
)

// Era is the MCP protocol era of a request (see package wire).
type Era = wire.Era

// The eras of [MCPMeta].Era.
const (
	EraModern  = wire.EraModern
	EraLegacy  = wire.EraLegacy
	EraUnknown = wire.EraUnknown
)

// ClientInfo is the MCP client's self-reported name and version. It is
// attribution only: anyone can send any value, so it is never identity,
// authorization, tenant or a rate-limit key.
type ClientInfo = wire.ClientInfo

// MCPMeta is the typed MCP metadata of one call.
type MCPMeta struct {
	Era             Era
	Method          string // "tools/call" or "tools/list"
	Tool            string
	ProtocolVersion string
	ClientInfo      *ClientInfo
	ProgressToken   any
	JSONRPCID       json.RawMessage // the id the MCP client sent, where known
	// Round is 1 for a first call and 2 or more for a multi-round-trip retry
	// (a call that echoes requestState / inputResponses). Where the transport
	// says which round it is (envelope), that value is used.
	Round int
	// Outcome is the multi-round outcome of this call, set from the result:
	// "complete" or "input_required".
	Outcome string
	// Meta is the request's raw _meta, as sent.
	Meta map[string]any
}

// AgentCoreFacts are the AgentCore Gateway values of the client context.
type AgentCoreFacts struct {
	ToolName          string // as sent: "<target>___<tool>" or a bare name
	RequestID         string
	MCPMessageID      string
	GatewayID         string
	TargetID          string
	MessageVersion    string
	PropagatedHeaders map[string]string
}

// mcpMetaFrom types the MCP facts of a request's _meta. Client info is read
// only from a modern request's _meta: a legacy request carries none, and
// none is invented.
func mcpMetaFrom(method, tool string, meta map[string]any) *MCPMeta {
	m := &MCPMeta{Method: method, Tool: tool, Meta: meta, Round: 1}
	if meta == nil {
		return m
	}
	if pv, ok := meta["io.modelcontextprotocol/protocolVersion"].(string); ok {
		m.ProtocolVersion = pv
		m.Era = wire.EraOf(pv)
	}
	if m.Era == EraModern {
		if ci, ok := meta["io.modelcontextprotocol/clientInfo"].(map[string]any); ok {
			info := &ClientInfo{}
			info.Name, _ = ci["name"].(string)
			info.Title, _ = ci["title"].(string)
			info.Version, _ = ci["version"].(string)
			m.ClientInfo = info
		}
	}
	m.ProgressToken = meta["progressToken"]
	return m
}

func roundOf(requestState string, inputResponses json.RawMessage) int {
	if requestState != "" || (len(inputResponses) > 0 && string(inputResponses) != "null") {
		return 2
	}
	return 1
}
