// Package audit records one row per tool call in DynamoDB, joined to the
// call's X-Ray subsegment, and never loses one: a row that cannot be written in
// time is printed as a structured log line that [Replay] puts back.
//
// The package knows nothing of MCP or the adapter's types: the adapter builds a
// [Row] from its per-call context and hands it to an [Auditor].
package audit

import (
	"encoding/json"
	"time"
)

// Status of a row. A destructive tool's row is written "pending" before its
// handler runs and completed afterwards, so a crash still leaves evidence.
const (
	StatusPending = "pending"
	StatusDone    = "done"
)

// Row is one audit record. The dynamodbav names are the table's attribute
// names (documented in docs/audit.md); keep them stable.
type Row struct {
	CallID string `json:"callId" dynamodbav:"callId"`
	Status string `json:"status" dynamodbav:"status"`
	Tool   string `json:"tool" dynamodbav:"tool"`
	Source string `json:"source" dynamodbav:"source"` // envelope | agentcore | jsonrpc | unknown

	// MCP metadata (absent for non-MCP calls).
	MCPEra          string `json:"mcpEra,omitempty" dynamodbav:"mcpEra,omitempty"`
	MCPMethod       string `json:"mcpMethod,omitempty" dynamodbav:"mcpMethod,omitempty"`
	ProtocolVersion string `json:"protocolVersion,omitempty" dynamodbav:"protocolVersion,omitempty"`
	ClientName      string `json:"clientName,omitempty" dynamodbav:"clientName,omitempty"`
	ClientVersion   string `json:"clientVersion,omitempty" dynamodbav:"clientVersion,omitempty"`
	MCPOutcome      string `json:"mcpOutcome,omitempty" dynamodbav:"mcpOutcome,omitempty"`
	MCPRound        int    `json:"mcpRound,omitempty" dynamodbav:"mcpRound,omitempty"`

	// Caller: only what was verified.
	CallerSubject    string `json:"callerSubject,omitempty" dynamodbav:"callerSubject,omitempty"`
	CallerAuthMethod string `json:"callerAuthMethod,omitempty" dynamodbav:"callerAuthMethod,omitempty"`
	CallerClientID   string `json:"callerClientId,omitempty" dynamodbav:"callerClientId,omitempty"`
	CallerIP         string `json:"callerIp,omitempty" dynamodbav:"callerIp,omitempty"`
	CallerUserAgent  string `json:"callerUserAgent,omitempty" dynamodbav:"callerUserAgent,omitempty"`
	// CallerRoleSession is an assumed IAM role's session name: chosen by
	// the caller, recorded beside the subject (the role), never as it.
	CallerRoleSession string `json:"callerRoleSession,omitempty" dynamodbav:"callerRoleSession,omitempty"`
	Tenant            string `json:"tenant,omitempty" dynamodbav:"tenant,omitempty"`
	SessionID         string `json:"sessionId,omitempty" dynamodbav:"sessionId,omitempty"`

	// Trace: span = the call's X-Ray subsegment id; parent = the trace
	// header's Parent; trace = its Root. LinkedTraceparent is a W3C
	// traceparent from _meta, kept as a link only.
	TraceID           string `json:"traceId,omitempty" dynamodbav:"traceId,omitempty"`
	SpanID            string `json:"spanId" dynamodbav:"spanId"`
	ParentSpanID      string `json:"parentSpanId,omitempty" dynamodbav:"parentSpanId,omitempty"`
	Sampled           string `json:"sampled,omitempty" dynamodbav:"sampled,omitempty"` // "1", "0", ""
	LinkedTraceparent string `json:"linkedTraceparent,omitempty" dynamodbav:"linkedTraceparent,omitempty"`

	StartedAt  time.Time `json:"startedAt" dynamodbav:"startedAt"` // RFC 3339 with nanoseconds (sorts as a string)
	DurationMs float64   `json:"durationMs" dynamodbav:"durationMs"`

	OK           bool   `json:"ok" dynamodbav:"ok"`
	Stage        string `json:"stage,omitempty" dynamodbav:"stage,omitempty"`
	ErrorCode    string `json:"errorCode,omitempty" dynamodbav:"errorCode,omitempty"`
	ErrorMessage string `json:"errorMessage,omitempty" dynamodbav:"errorMessage,omitempty"` // what the caller was told
	// RawError is the raw error message, set only where the caller's copy
	// was scrubbed (an unexpected error): the audit keeps the why.
	RawError     string          `json:"rawError,omitempty" dynamodbav:"rawError,omitempty"`
	ErrorDetails json.RawMessage `json:"errorDetails,omitempty" dynamodbav:"-"`
	Panicked     bool            `json:"panicked,omitempty" dynamodbav:"panicked,omitempty"`

	// Arguments are the raw call arguments; the Auditor sanitizes them into
	// ArgsPreview and never stores them as given.
	Arguments     json.RawMessage `json:"-" dynamodbav:"-"`
	ArgsPreview   string          `json:"argsPreview,omitempty" dynamodbav:"argsPreview,omitempty"`
	ArgsTruncated bool            `json:"argsTruncated,omitempty" dynamodbav:"argsTruncated,omitempty"`
	ResultBytes   int             `json:"resultBytes" dynamodbav:"resultBytes"`

	Dimensions map[string]string `json:"dimensions,omitempty" dynamodbav:"dimensions,omitempty"`

	LambdaRequestID string `json:"lambdaRequestId,omitempty" dynamodbav:"lambdaRequestId,omitempty"`
	FunctionName    string `json:"functionName,omitempty" dynamodbav:"functionName,omitempty"`
	FunctionVersion string `json:"functionVersion,omitempty" dynamodbav:"functionVersion,omitempty"`
	ColdStart       bool   `json:"coldStart,omitempty" dynamodbav:"coldStart,omitempty"`
	Destructive     bool   `json:"destructive,omitempty" dynamodbav:"destructive,omitempty"`

	// ExpiresAt is the TTL attribute (epoch seconds).
	ExpiresAt int64 `json:"expiresAt,omitempty" dynamodbav:"expiresAt,omitempty"`
}
