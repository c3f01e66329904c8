package adapter

import (
	"bytes"
	stdjson "encoding/json"
	"strings"
	"unicode/utf8"

	json "github.com/segmentio/encoding/json"

	"github.com/mcpfn/mcpfn/wire"
)

func decodeAgentCore(payload []byte, custom map[string]string, limits Limits) *decoded {
	facts := &AgentCoreFacts{
		ToolName:       custom[wire.AgentCoreToolName],
		RequestID:      custom[wire.AgentCoreRequestID],
		MCPMessageID:   custom[wire.AgentCoreMessageID],
		GatewayID:      custom[wire.AgentCoreGatewayID],
		TargetID:       custom[wire.AgentCoreTargetID],
		MessageVersion: custom[wire.AgentCoreMessageVersion],
	}
	name := facts.ToolName
	if _, after, ok := strings.Cut(name, wire.AgentCoreTargetSeparator); ok {
		name = after
	}
	d := &decoded{source: SourceAgentCore, method: "tools/call", toolName: name, agentCore: facts,
		mcp: &MCPMeta{Era: EraUnknown, Method: "tools/call", Tool: name, Round: 1}}
	if id := facts.RequestID + ":" + facts.MCPMessageID; facts.RequestID != "" && facts.MCPMessageID != "" && validCallID(id) {
		// Otherwise the Lambda request id names the call.
		d.callID = id
	}
	if raw, ok := custom[wire.AgentCorePropagatedHeaders]; ok && raw != "" {
		headers, err := parsePropagatedHeaders(raw)
		if err != nil {
			d.err = Errorf(CodeBadRequest, "client context %s is not a JSON object of strings: %s", wire.AgentCorePropagatedHeaders, jsonErrorText(err))
			return d
		}
		facts.PropagatedHeaders = headers
	}
	switch {
	case len(payload) > limits.MaxPayloadBytes:
		d.err = Errorf(CodePayloadTooLarge, "the payload is %d bytes; this function accepts at most %d", len(payload), limits.MaxPayloadBytes)
	case !utf8.Valid(payload):
		d.err = NewError(CodeBadRequest, "the payload is not valid UTF-8")
	default:
		args, token, err := takeReserved(bytes.TrimSpace(payload))
		if err != nil {
			d.err = err
			return d
		}
		d.args, d.callToken = args, token
	}
	return d
}

// takeReserved splits the interceptor's _mcpfn object off an AgentCore
// payload. Arguments that do not mention it come back as they are; an
// _mcpfn that is not {"callToken":"<non-empty string>"} is a bad request.
func takeReserved(args []byte) (json.RawMessage, string, *Error) {
	// Only an object can carry it; a JSON escape could spell its name
	// without the plain bytes, so "\u" also takes the slow path.
	if len(args) == 0 || args[0] != '{' || (!bytes.Contains(args, []byte(wire.ReservedArgument)) && !bytes.Contains(args, []byte(`\u`))) {
		return args, "", nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil {
		return args, "", nil // not an object after all: the schema says why
	}
	raw, ok := obj[wire.ReservedArgument]
	if !ok {
		return args, "", nil
	}
	var r struct {
		CallToken *string `json:"callToken"`
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' || json.Unmarshal(t, &r) != nil || r.CallToken == nil || *r.CallToken == "" {
		return nil, "", Errorf(CodeBadRequest, "the reserved argument %s must be {\"callToken\":\"…\"}, as the mcpfn AgentCore interceptor sets it", wire.ReservedArgument)
	}
	delete(obj, wire.ReservedArgument)
	// Marshalled with encoding/json, as every value the adapter writes (ADR 0012).
	out, err := stdjson.Marshal(obj)
	if err != nil {
		return nil, "", Errorf(CodeBadRequest, "the arguments cannot be re-encoded without %s: %v", wire.ReservedArgument, err)
	}
	return out, *r.CallToken, nil
}

// parsePropagatedHeaders accepts the JSON object AgentCore serialises into a
// string; values that are not strings are kept as their JSON text.
func parsePropagatedHeaders(raw string) (map[string]string, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		var s string
		if json.Unmarshal(v, &s) == nil {
			out[k] = s
		} else {
			out[k] = string(v)
		}
	}
	return out, nil
}
