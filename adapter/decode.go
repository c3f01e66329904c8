package adapter

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/lambdacontext"
	json "github.com/segmentio/encoding/json"

	"github.com/mcpfn/mcpfn/audit"
)

// acceptedFormats is quoted by every "unrecognised payload" error, so a caller
// who sent the wrong thing learns what would have worked.
const acceptedFormats = `this function accepts: (1) an mcpfn envelope {"mcpfn":"1","callId":…,"params":{"name":…,"arguments":{…}}}; ` +
	`(2) an AgentCore Gateway Lambda-target call (the arguments object as payload, client context custom.bedrockAgentCoreToolName set); ` +
	`(3) a JSON-RPC 2.0 request {"jsonrpc":"2.0","id":…,"method":"tools/call","params":{"name":…,"arguments":{…}}} or a batch of them`

// AgentCore client-context keys (custom map).
const (
	acToolName          = "bedrockAgentCoreToolName"
	acRequestID         = "bedrockAgentCoreAwsRequestId"
	acMessageID         = "bedrockAgentCoreMcpMessageId"
	acGatewayID         = "bedrockAgentCoreGatewayId"
	acTargetID          = "bedrockAgentCoreTargetId"
	acMessageVersion    = "bedrockAgentCoreMessageVersion"
	acPropagatedHeaders = "bedrockAgentCorePropagatedHeaders"
	acTargetSeparator   = "___"
)

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
	if lc != nil && lc.ClientContext.Custom[acToolName] != "" {
		return one(decodeAgentCore(payload, lc.ClientContext.Custom, limits))
	}
	if len(payload) > limits.MaxPayloadBytes {
		return one(decodeFailure(SourceUnknown, RPCInvalidRequest, CodePayloadTooLarge,
			"the payload is %d bytes; this function accepts at most %d", len(payload), limits.MaxPayloadBytes))
	}
	if !utf8.Valid(payload) {
		return one(decodeFailure(SourceUnknown, RPCParseError, CodeBadRequest, "the payload is not valid UTF-8"))
	}
	trimmed := bytes.TrimSpace(payload)
	// Depth first: encoding/json itself rejects 10,000 levels as "invalid",
	// which would hide the real reason.
	if depthExceeded(trimmed, limits.MaxDepth) {
		return one(decodeFailure(SourceUnknown, RPCInvalidRequest, CodeBadRequest,
			"the payload nests deeper than %d levels", limits.MaxDepth))
	}
	if !json.Valid(trimmed) {
		return one(decodeFailure(SourceUnknown, RPCParseError, CodeBadRequest, "the payload is not valid JSON; %s", acceptedFormats))
	}
	if len(trimmed) == 0 {
		return one(decodeFailure(SourceUnknown, RPCParseError, CodeBadRequest, "the payload is empty; %s", acceptedFormats))
	}
	switch trimmed[0] {
	case '[':
		if !json.Valid(trimmed) {
			return one(decodeFailure(SourceUnknown, RPCParseError, CodeBadRequest, "the payload is not valid JSON; %s", acceptedFormats))
		}
		return decodeBatch(trimmed, limits)
	case '{':
	default:
		if !json.Valid(trimmed) {
			return one(decodeFailure(SourceUnknown, RPCParseError, CodeBadRequest, "the payload is not valid JSON; %s", acceptedFormats))
		}
		return one(decodeFailure(SourceUnknown, RPCInvalidRequest, CodeBadRequest, "the payload is JSON but not an object; %s", acceptedFormats))
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
		return one(decodeFailure(SourceUnknown, RPCInvalidRequest, CodeBadRequest, "unrecognised payload; %s", acceptedFormats))
	}
	// Slow path: find out which format it meant to be, for a precise error.
	if !json.Valid(trimmed) {
		return one(decodeFailure(SourceUnknown, RPCParseError, CodeBadRequest, "the payload is not valid JSON; %s", acceptedFormats))
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &keys); err != nil {
		return one(decodeFailure(SourceUnknown, RPCParseError, CodeBadRequest, "the payload cannot be decoded: %s", jsonErrorText(err)))
	}
	if _, ok := keys["mcpfn"]; ok {
		return one(decodeEnvelope(trimmed))
	}
	if _, ok := keys["jsonrpc"]; ok {
		return one(decodeJSONRPC(trimmed))
	}
	return one(decodeFailure(SourceUnknown, RPCInvalidRequest, CodeBadRequest, "unrecognised payload; %s", acceptedFormats))
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
	Envelope
	Version *json.RawMessage `json:"mcpfn"` // shadows Envelope.Version: presence marks an envelope
	JSONRPC *string          `json:"jsonrpc"`
	ID      json.RawMessage  `json:"id,omitempty"`
	Method  string           `json:"method"`
}

func decodeEnvelope(payload []byte) *decoded {
	var env Envelope
	if err := json.Unmarshal(payload, &env); err != nil {
		return decodeFailure(SourceEnvelope, RPCInvalidRequest, CodeBadRequest, "malformed mcpfn envelope: %s", jsonErrorText(err))
	}
	return decodedEnvelope(env)
}

func decodedEnvelope(env Envelope) *decoded {
	if env.Version != EnvelopeVersion {
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
	}
	if env.MCP.Method != "" {
		d.method = env.MCP.Method
	}
	m := mcpMetaFrom(d.method, env.Params.Name, env.Params.Meta)
	if env.MCP.ProtocolVersion != "" {
		m.ProtocolVersion = env.MCP.ProtocolVersion
		m.Era = EraOf(env.MCP.ProtocolVersion)
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
		d.err, d.rpcCode = NewError(CodeBadRequest, "the mcpfn envelope has no callId"), RPCInvalidRequest
	case !validCallID(env.CallID):
		// It would key the audit row: the row is kept under the Lambda
		// request id instead.
		d.callID = ""
		d.err, d.rpcCode = Errorf(CodeBadRequest, "the mcpfn envelope's callId is not an id (at most %d letters, digits and %s; no credential)", maxCallIDLen, callIDPunct), RPCInvalidRequest
	case env.Params.Name == "":
		d.err, d.rpcCode = NewError(CodeBadRequest, "the mcpfn envelope names no tool (params.name)"), RPCInvalidParams
	}
	return d
}

// envelopeVersionFailure refuses an envelope whose version (as the JSON text
// sent) is not the string "1".
func envelopeVersionFailure(env Envelope, version string) *decoded {
	if len(version) > 32 {
		version = strings.ToValidUTF8(version[:32], "") + "…"
	}
	d := decodeFailure(SourceEnvelope, RPCInvalidRequest, CodeBadRequest,
		"unsupported mcpfn envelope version %s; this function accepts version %q (a JSON string)", version, EnvelopeVersion)
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
		d := decodeFailure(SourceJSONRPC, RPCParseError, CodeBadRequest, "malformed JSON-RPC batch: %s", jsonErrorText(err))
		return invocation{source: SourceJSONRPC, calls: []*decoded{d}}
	}
	inv := invocation{source: SourceJSONRPC, batch: true}
	switch {
	case len(items) == 0:
		inv.calls = []*decoded{decodeFailure(SourceJSONRPC, RPCInvalidRequest, CodeBadRequest, "empty JSON-RPC batch")}
		inv.batch = false
	case len(items) > limits.MaxBatch:
		inv.calls = []*decoded{decodeFailure(SourceJSONRPC, RPCInvalidRequest, CodeBadRequest,
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
		d := decodeFailure(SourceJSONRPC, RPCInvalidRequest, CodeBadRequest, "malformed JSON-RPC request: %s", jsonErrorText(err))
		d.rpcID = req.ID
		return d
	}
	return decodedJSONRPC(req, nil)
}

// decodedJSONRPC types a JSON-RPC request; params is its tools/call params
// when the caller decoded them already.
func decodedJSONRPC(req rpcRequest, params *EnvelopeParams) *decoded {
	if req.JSONRPC != "2.0" || req.Method == "" {
		d := decodeFailure(SourceJSONRPC, RPCInvalidRequest, CodeBadRequest, "a JSON-RPC request needs \"jsonrpc\":\"2.0\" and a method")
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
			d.err, d.rpcCode = NewError(CodeBadRequest, "tools/call needs params with a tool name"), RPCInvalidParams
			return d
		}
		params = &EnvelopeParams{}
		if err := json.Unmarshal(req.Params, params); err != nil {
			d.err, d.rpcCode = Errorf(CodeBadRequest, "malformed tools/call params: %s", jsonErrorText(err)), RPCInvalidParams
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
		d.err, d.rpcCode = NewError(CodeBadRequest, "tools/call params name no tool"), RPCInvalidParams
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

func decodeAgentCore(payload []byte, custom map[string]string, limits Limits) *decoded {
	facts := &AgentCoreFacts{
		ToolName:       custom[acToolName],
		RequestID:      custom[acRequestID],
		MCPMessageID:   custom[acMessageID],
		GatewayID:      custom[acGatewayID],
		TargetID:       custom[acTargetID],
		MessageVersion: custom[acMessageVersion],
	}
	name := facts.ToolName
	if _, after, ok := strings.Cut(name, acTargetSeparator); ok {
		name = after
	}
	d := &decoded{source: SourceAgentCore, method: "tools/call", toolName: name, agentCore: facts,
		mcp: &MCPMeta{Era: EraUnknown, Method: "tools/call", Tool: name, Round: 1}}
	if id := facts.RequestID + ":" + facts.MCPMessageID; facts.RequestID != "" && facts.MCPMessageID != "" && validCallID(id) {
		// Otherwise the Lambda request id names the call.
		d.callID = id
	}
	if raw, ok := custom[acPropagatedHeaders]; ok && raw != "" {
		headers, err := parsePropagatedHeaders(raw)
		if err != nil {
			d.err = Errorf(CodeBadRequest, "client context %s is not a JSON object of strings: %s", acPropagatedHeaders, jsonErrorText(err))
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

// ReservedArgument is the argument key under which the mcpfn AgentCore
// request interceptor passes its call token to a Lambda target:
// {"_mcpfn":{"callToken":"…"}}. The adapter removes it before anything else
// reads the arguments, so tool schemas never see it and the token's
// arguments digest covers the arguments without it.
const ReservedArgument = "_mcpfn"

// takeReserved splits the interceptor's _mcpfn object off an AgentCore
// payload. Arguments that do not mention it come back as they are; an
// _mcpfn that is not {"callToken":"<non-empty string>"} is a bad request.
func takeReserved(args []byte) (json.RawMessage, string, *Error) {
	// Only an object can carry it; a JSON escape could spell its name
	// without the plain bytes, so "\u" also takes the slow path.
	if len(args) == 0 || args[0] != '{' || (!bytes.Contains(args, []byte(ReservedArgument)) && !bytes.Contains(args, []byte(`\u`))) {
		return args, "", nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil {
		return args, "", nil // not an object after all: the schema says why
	}
	raw, ok := obj[ReservedArgument]
	if !ok {
		return args, "", nil
	}
	var r struct {
		CallToken *string `json:"callToken"`
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' || json.Unmarshal(t, &r) != nil || r.CallToken == nil || *r.CallToken == "" {
		return nil, "", Errorf(CodeBadRequest, "the reserved argument %s must be {\"callToken\":\"…\"}, as the mcpfn AgentCore interceptor sets it", ReservedArgument)
	}
	delete(obj, ReservedArgument)
	out, err := json.Marshal(obj)
	if err != nil {
		return nil, "", Errorf(CodeBadRequest, "the arguments cannot be re-encoded without %s: %v", ReservedArgument, err)
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
		m.Era = EraOf(pv)
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

// ClientContextFromHeader decodes an X-Amz-Client-Context header value (base64
// JSON) the way Lambda does before it invokes a function, for an Invoke API
// stand-in (the local stack) that must refuse what Lambda refuses.
func ClientContextFromHeader(header string) (*lambdacontext.ClientContext, error) {
	raw, err := base64.StdEncoding.DecodeString(header)
	if err != nil {
		return nil, fmt.Errorf("client context is not valid base64: %w", err)
	}
	var cc lambdacontext.ClientContext
	if err := json.Unmarshal(raw, &cc); err != nil {
		return nil, fmt.Errorf("client context is not a valid JSON object: %s", jsonErrorText(err))
	}
	return &cc, nil
}
