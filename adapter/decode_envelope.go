package adapter

import (
	"strconv"
	"strings"

	json "github.com/segmentio/encoding/json"

	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/wire"
)

func decodeEnvelope(payload []byte) *decoded {
	var env wire.Envelope
	if err := json.Unmarshal(payload, &env); err != nil {
		return decodeFailure(SourceEnvelope, wire.RPCInvalidRequest, CodeBadRequest, "malformed mcpfn envelope: %s", jsonErrorText(err))
	}
	return decodedEnvelope(env)
}

func decodedEnvelope(env wire.Envelope) *decoded {
	if env.Version != wire.EnvelopeVersion {
		return envelopeVersionFailure(env, strconv.Quote(env.Version))
	}
	d := &decoded{
		source:    SourceEnvelope,
		callID:    env.CallID,
		method:    "tools/call",
		toolName:  env.Params.Name,
		args:      env.Params.Arguments,
		meta:      env.Params.Meta,
		callToken: env.CallToken,
		claimed:   env.ClaimedCaller,
		sessionID: env.SessionID,
		envTrace:  env.TraceHeader,
		rpcID:     env.MCP.JSONRPCID,

		inputResponses: env.Params.InputResponses,
		requestState:   env.Params.RequestState,

		stream:  env.Stream,
		cancel:  env.Cancel,
		argsRef: env.Params.ArgumentsRef,
	}
	if env.Task != nil {
		d.task = env.Task.ID
	}
	if env.MCP.Method != "" {
		d.method = env.MCP.Method
	}
	m := mcpMetaFrom(d.method, env.Params.Name, env.Params.Meta)
	if env.MCP.ProtocolVersion != "" {
		m.ProtocolVersion = env.MCP.ProtocolVersion
		m.Era = wire.EraOf(env.MCP.ProtocolVersion)
	}
	if env.MCP.Era != "" {
		m.Era = env.MCP.Era
	}
	if env.MCP.ClientInfo != nil {
		m.ClientInfo = env.MCP.ClientInfo
	}
	m.JSONRPCID = env.MCP.JSONRPCID
	m.Round = roundOf(env.Params.RequestState, env.Params.InputResponses)
	if env.MCP.Round > 0 {
		m.Round = env.MCP.Round
	}
	d.mcp = m
	switch {
	case env.CallID == "":
		d.err, d.rpcCode = NewError(CodeBadRequest, "the mcpfn envelope has no callId"), wire.RPCInvalidRequest
	case !validCallID(env.CallID):
		// It would key the audit row: the row is kept under the Lambda
		// request id instead.
		d.callID = ""
		d.err, d.rpcCode = Errorf(CodeBadRequest, "the mcpfn envelope's callId is not an id (at most %d letters, digits and %s; no credential)", maxCallIDLen, callIDPunct), wire.RPCInvalidRequest
	case env.Params.Name == "":
		d.err, d.rpcCode = NewError(CodeBadRequest, "the mcpfn envelope names no tool (params.name)"), wire.RPCInvalidParams
	}
	return d
}

// envelopeVersionFailure refuses an envelope whose version (as the JSON text
// sent) is not the string "1".
func envelopeVersionFailure(env wire.Envelope, version string) *decoded {
	if len(version) > 32 {
		version = strings.ToValidUTF8(version[:32], "") + "…"
	}
	d := decodeFailure(SourceEnvelope, wire.RPCInvalidRequest, CodeBadRequest,
		"unsupported mcpfn envelope version %s; this function accepts version %q (a JSON string)", version, wire.EnvelopeVersion)
	if validCallID(env.CallID) {
		d.callID = env.CallID
	}
	d.toolName = env.Params.Name
	return d
}

// maxCallIDLen and callIDPunct bound a call id that the payload supplies.
const (
	maxCallIDLen = 128
	callIDPunct  = "._:#@/+=~-"
)

// validCallID reports whether id may key an audit row: what signers and
// AgentCore generate (hex, UUIDs, request id:message id), never free text
// or a credential a sender put there.
func validCallID(id string) bool {
	if id == "" || len(id) > maxCallIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(callIDPunct, c) >= 0) {
			return false
		}
	}
	return !audit.IsCredentialShaped(id)
}
