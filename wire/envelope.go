package wire

import (
	"encoding/json"

	"github.com/mcpfn/mcpfn/calltoken"
)

// EnvelopeVersion is the version of the mcpfn envelope this module writes
// and reads. A function answers any other version with BAD_REQUEST naming
// the versions it accepts: it never guesses at a newer format. Only the JSON
// string "1" is version 1; a number that prints the same is refused.
const EnvelopeVersion = "1"

// Envelope is the payload the mcpfn gateway sends to a tool function. It
// travels in the payload, not the client context (limited to 3,583 bytes and
// dropped by `sam local`), so `sam local invoke -e event.json` works with it.
type Envelope struct {
	// Version is "1". Its presence (the key "mcpfn") marks the payload as an
	// envelope.
	Version string `json:"mcpfn"`
	// CallID is stable across the gateway's retries of the same call.
	CallID string `json:"callId"`
	// Params are the tools/call params as the MCP client sent them.
	Params EnvelopeParams `json:"params"`
	// MCP are the protocol facts the gateway saw on the request.
	MCP EnvelopeMCP `json:"mcp"`
	// CallToken is the signer's call token (package calltoken): it binds
	// the verified caller, the call id, the tool, the arguments and the
	// target function. A function refuses an envelope without a valid one.
	CallToken string `json:"callToken,omitempty"`
	// ClaimedCaller is a caller named in the payload itself. It is never
	// identity: a function records it in the audit row as unverified, and
	// nothing else. (Envelopes before call tokens carried the caller here.)
	ClaimedCaller *calltoken.Identity `json:"caller,omitempty"`
	// SessionID is the Mcp-Session-Id header, if the client sent one: caller
	// data, never identity.
	SessionID string `json:"sessionId,omitempty"`
	// TraceHeader is the gateway's X-Ray header for this call; used as the
	// parent only where Lambda supplies none (sam local).
	TraceHeader string `json:"traceHeader,omitempty"`
	// Stream asks for a streamed answer (NDJSON, stream.go): set by a
	// gateway only when it invokes with InvokeWithResponseStream and will
	// relay the frames to the client. Without it a function answers with
	// one JSON payload, as always.
	Stream *StreamRequest `json:"stream,omitempty"`
	// Task makes the invocation the run of a task (the MCP Tasks
	// extension): the function claims the task record, runs the call and
	// records its outcome there. The call token must name the same task.
	Task *TaskRun `json:"task,omitempty"`
	// Cancel names the cancel marker of a synchronous call: the function
	// watches it while the handler runs and cancels the handler's context
	// when the caller cancels the request (notifications/cancelled).
	Cancel *CancelMarker `json:"cancel,omitempty"`
}

// StreamRequest is what a gateway will relay while the call runs.
type StreamRequest struct {
	// Progress: the client sent a progress token; progress frames are
	// relayed as notifications/progress.
	Progress bool `json:"progress,omitempty"`
	// LogLevel is the least severe log level the client asked for (an MCP
	// logging level: debug … emergency); "" relays no log frames.
	LogLevel string `json:"logLevel,omitempty"`
}

// TaskRun names the task an invocation runs.
type TaskRun struct {
	ID string `json:"id"`
}

// CancelMarker is the key of a synchronous call's cancel marker in the
// tasks table (taskstore.MarkCancelled(Owner, Request)).
type CancelMarker struct {
	// Owner is the gateway's caller key (as for a task's owner).
	Owner string `json:"owner"`
	// Request is the request key the gateway marks, e.g. the JSON-RPC id.
	Request string `json:"request"`
}

// EnvelopeParams are tools/call params.
type EnvelopeParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// ArgumentsRef replaces Arguments when the gateway stored them (they
	// would not fit the invocation's payload or the task record): the
	// function reads them, checks their SHA-256 against the call token's
	// argument digest, and goes on as if they had come inline. It sits in
	// params so that a task record, which keeps the params, keeps it too.
	ArgumentsRef *ObjectRef     `json:"argumentsRef,omitempty"`
	Meta         map[string]any `json:"_meta,omitempty"`
	// Multi-round-trip fields, passed through.
	InputResponses json.RawMessage `json:"inputResponses,omitempty"`
	RequestState   string          `json:"requestState,omitempty"`
}

// EnvelopeMCP are the MCP facts of the request that carried the call.
type EnvelopeMCP struct {
	Era             Era             `json:"era,omitempty"`
	Method          string          `json:"method,omitempty"`
	ProtocolVersion string          `json:"protocolVersion,omitempty"`
	ClientInfo      *ClientInfo     `json:"clientInfo,omitempty"`
	JSONRPCID       json.RawMessage `json:"jsonrpcId,omitempty"`
	Round           int             `json:"round,omitempty"`
}

// EnvelopeResponse is a tool function's answer to an envelope: exactly one of
// Result (an MCP CallToolResult), ResultRef (the same, stored), Error (a
// JSON-RPC error object, for protocol failures such as an unknown tool) or
// StartTask.
type EnvelopeResponse struct {
	Version string          `json:"mcpfn"`
	CallID  string          `json:"callId,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	// ResultRef replaces Result when the function stored the result (it
	// would not fit the answer): the gateway reads it, checks it, and
	// answers it inline or as resource links (docs/envelope.md).
	ResultRef *ObjectRef `json:"resultRef,omitempty"`
	Error     *RPCError  `json:"error,omitempty"`
	// StartTask: the tool (one that supports tasks) asks for this call to
	// run as a task. The gateway creates the task and invokes the function
	// again, asynchronously, with the same envelope (its inputResponses and
	// requestState too), a call token naming the task, and Task set. Only
	// a synchronous call answers it.
	StartTask bool `json:"startTask,omitempty"`
}

// Era is the MCP protocol era of a request.
type Era string

const (
	// EraModern is 2026-07-28 and later: every request carries its protocol
	// version and client info in _meta.
	EraModern Era = "modern"
	// EraLegacy is the initialize-era versions (2024-11-05 … 2025-11-25).
	EraLegacy Era = "legacy"
	// EraUnknown is a call whose transport does not say (AgentCore Gateway
	// passes the arguments only).
	EraUnknown Era = ""
)

// ModernProtocolVersion is the first protocol version of the modern era.
const ModernProtocolVersion = "2026-07-28"

// EraOf classifies an MCP protocol version. Versions compare as dates.
func EraOf(protocolVersion string) Era {
	if protocolVersion == "" {
		return EraUnknown
	}
	if protocolVersion >= ModernProtocolVersion {
		return EraModern
	}
	return EraLegacy
}

// ClientInfo is the MCP client's self-reported name and version. It is
// attribution only: anyone can send any value, so it is never identity,
// authorization, tenant or a rate-limit key.
type ClientInfo struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version,omitempty"`
}
