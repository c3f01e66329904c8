package adapter

import (
	"bytes"
	"errors"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/lambdacontext"
	json "github.com/segmentio/encoding/json"

	"github.com/mcpfn/mcpfn/wire"
)

// Step 1 recognises the payload's format here and hands it to the decoder of
// that format: decode_envelope.go, decode_jsonrpc.go, decode_agentcore.go.

// acceptedFormats is quoted by every "unrecognised payload" error, so a caller
// who sent the wrong thing learns what would have worked.
const acceptedFormats = `this function accepts: (1) an mcpfn envelope {"mcpfn":"1","callId":…,"params":{"name":…,"arguments":{…}}}; ` +
	`(2) an AgentCore Gateway Lambda-target call (the arguments object as payload, client context custom.bedrockAgentCoreToolName set); ` +
	`(3) a JSON-RPC 2.0 request {"jsonrpc":"2.0","id":…,"method":"tools/call","params":{"name":…,"arguments":{…}}} or a batch of them`

// decoded is one call found in an invocation, or the reason none could be.
type decoded struct {
	source    Source
	callID    string // "" → derived from the Lambda request id
	method    string
	toolName  string
	args      json.RawMessage
	meta      map[string]any
	mcp       *MCPMeta
	callToken string    // the signer's call token, verified in step 1
	claimed   *Identity // a caller the payload names: never identity
	sessionID string
	envTrace  string // the caller's trace header (envelope)
	agentCore *AgentCoreFacts
	rpcID     json.RawMessage // JSON-RPC id, for the response
	// Multi-round: the client's answers and the sealed state it echoed.
	inputResponses json.RawMessage
	requestState   string
	isNotify       bool // JSON-RPC notification: no response
	// Long-running calls (envelope): what the gateway relays, the task the
	// call runs, the cancel marker to watch; frames is where a streamed
	// call's frames go (set by InvokeStream).
	stream *wire.StreamRequest
	task   string
	cancel *wire.CancelMarker
	// argsRef: the gateway stored the arguments (params.argumentsRef);
	// args is empty until step 1 reads them (claimcheck.go).
	argsRef *wire.ObjectRef
	frames  *wire.StreamWriter

	// err is why the call cannot run. rpcCode != 0 makes it a protocol
	// failure (a JSON-RPC error), otherwise it is a tool error result.
	err     *Error
	rpcCode int
}

// invocation is a decoded payload: one call, or a JSON-RPC batch.
type invocation struct {
	source Source
	batch  bool
	calls  []*decoded
}

func decodeFailure(src Source, rpcCode int, code Code, format string, args ...any) *decoded {
	return &decoded{source: src, method: "tools/call", rpcCode: rpcCode, err: Errorf(code, format, args...)}
}

// decodeInvocation recognises the payload's format. It never panics and
// always returns at least one call, so every invocation, malformed or not, is
// answered and audited.
func decodeInvocation(payload []byte, lc *lambdacontext.LambdaContext, limits Limits) invocation {
	one := func(d *decoded) invocation { return invocation{source: d.source, calls: []*decoded{d}} }

	// AgentCore first: its payload is the caller's arguments object, so a
	// client could shape it like an envelope or a JSON-RPC request. The
	// client context is set by AgentCore Gateway itself and decides.
	if lc != nil && lc.ClientContext.Custom[wire.AgentCoreToolName] != "" {
		return one(decodeAgentCore(payload, lc.ClientContext.Custom, limits))
	}
	if len(payload) > limits.MaxPayloadBytes {
		return one(decodeFailure(SourceUnknown, wire.RPCInvalidRequest, CodePayloadTooLarge,
			"the payload is %d bytes; this function accepts at most %d", len(payload), limits.MaxPayloadBytes))
	}
	if !utf8.Valid(payload) {
		return one(decodeFailure(SourceUnknown, wire.RPCParseError, CodeBadRequest, "the payload is not valid UTF-8"))
	}
	trimmed := bytes.TrimSpace(payload)
	// Depth first: encoding/json itself rejects 10,000 levels as "invalid",
	// which would hide the real reason.
	if depthExceeded(trimmed, limits.MaxDepth) {
		return one(decodeFailure(SourceUnknown, wire.RPCInvalidRequest, CodeBadRequest,
			"the payload nests deeper than %d levels", limits.MaxDepth))
	}
	// From here on the payload is valid JSON, so it is not empty (an empty
	// input is not valid JSON) and needs no second check.
	if !json.Valid(trimmed) {
		return one(decodeFailure(SourceUnknown, wire.RPCParseError, CodeBadRequest, "the payload is not valid JSON; %s", acceptedFormats))
	}
	switch trimmed[0] {
	case '[':
		return decodeBatch(trimmed, limits)
	case '{':
	default:
		return one(decodeFailure(SourceUnknown, wire.RPCInvalidRequest, CodeBadRequest, "the payload is JSON but not an object; %s", acceptedFormats))
	}
	// Fast path: one decode of a well-formed envelope or JSON-RPC request,
	// from a copy of the payload that the decoded strings and raw messages
	// share (one allocation instead of one per field). Never the payload
	// itself: aws-lambda-go reads every invocation into the same buffer, and
	// a call's values may outlive its invocation (a late handler, its audit).
	var w wirePayload
	if err := parseShared(bytes.Clone(trimmed), &w); err == nil {
		switch {
		case w.Version != nil:
			env := w.Envelope
			if json.Unmarshal(*w.Version, &env.Version) != nil {
				// Only the JSON string "1" is version 1: a number that
				// prints the same is another client's guess, refused.
				return one(envelopeVersionFailure(env, string(*w.Version)))
			}
			return one(decodedEnvelope(env))
		case w.JSONRPC != nil:
			return one(decodedJSONRPC(rpcRequest{JSONRPC: *w.JSONRPC, ID: w.ID, Method: w.Method}, &w.Envelope.Params))
		}
		return one(decodeFailure(SourceUnknown, wire.RPCInvalidRequest, CodeBadRequest, "unrecognised payload; %s", acceptedFormats))
	}
	// Slow path: find out which format it meant to be, for a precise error.
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &keys); err != nil {
		return one(decodeFailure(SourceUnknown, wire.RPCParseError, CodeBadRequest, "the payload cannot be decoded: %s", jsonErrorText(err)))
	}
	if _, ok := keys["mcpfn"]; ok {
		return one(decodeEnvelope(trimmed))
	}
	if _, ok := keys["jsonrpc"]; ok {
		return one(decodeJSONRPC(trimmed))
	}
	return one(decodeFailure(SourceUnknown, wire.RPCInvalidRequest, CodeBadRequest, "unrecognised payload; %s", acceptedFormats))
}

// parseShared is json.Unmarshal whose strings and raw messages share b
// instead of copying it; b must be the caller's own, never changed after.
func parseShared(b []byte, v any) error {
	r, err := json.Parse(b, v, json.ZeroCopy)
	if err == nil && len(r) != 0 {
		err = errors.New("trailing data after the JSON value")
	}
	return err
}

// wirePayload decodes an envelope and a JSON-RPC request in one pass: their
// keys do not collide except "params", whose tools/call shape they share.
type wirePayload struct {
	wire.Envelope
	Version *json.RawMessage `json:"mcpfn"` // shadows wire.Envelope.Version: presence marks an envelope
	JSONRPC *string          `json:"jsonrpc"`
	ID      json.RawMessage  `json:"id,omitempty"`
	Method  string           `json:"method"`
}

// depthExceeded reports whether valid JSON nests deeper than max. It scans
// bytes (strings skipped) so a hostile 10,000-level payload costs one pass,
// not a recursive decode.
func depthExceeded(data []byte, max int) bool {
	depth, inString, escaped := 0, false, false
	for _, c := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > max {
				return true
			}
		case '}', ']':
			depth--
		}
	}
	return false
}
