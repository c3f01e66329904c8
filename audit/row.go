// Package audit records one row per tool call in DynamoDB, joined to the
// call's X-Ray subsegment, and never loses one: a row that cannot be written in
// time is printed as a structured log line that [Replay] puts back.
//
// The package knows nothing of MCP or the adapter's types: the adapter builds a
// [Row] from its per-call context and hands it to an [Auditor].
package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/mcpfn/mcpfn/calltoken"
)

// Status of a row. A destructive tool's row is written "pending" before its
// handler runs and completed afterwards, so a crash still leaves evidence.
// "late" is never stored: it marks a fallback line that carries a late
// outcome (see [Auditor.Late]) for [Replay] to apply.
const (
	StatusPending = "pending"
	StatusDone    = "done"
	StatusLate    = "late"
)

// OutcomeUnknown is a row's Outcome when the call was answered without
// knowing whether it took effect: a destructive handler that outlived its
// deadline, or — in the gateway's row — a call whose function got the
// request but gave no answer (timeout, 5xx, reset, crash).
const OutcomeUnknown = "unknown"

// Row is one audit record. The dynamodbav names are the table's attribute
// names (documented in docs/audit.md); keep them stable.
type Row struct {
	CallID string `json:"callId" dynamodbav:"callId"`
	// Writer is who wrote the row: the tool whose function served the call,
	// or GatewayWriter for the gateway's row of a call its function did not
	// answer. The table's key is "<writer>#<callId>" ([Row.Key]), so IAM
	// confines each writer to its own rows (dynamodb:LeadingKeys) and the
	// rows of two writers never compete for a key; readers join them by
	// call id ([JoinCalls]). Empty: Tool.
	Writer string `json:"writer,omitempty" dynamodbav:"writer,omitempty"`
	Status string `json:"status" dynamodbav:"status"`
	// AttemptID names one execution of the call. Only the attempt that
	// wrote a pending row may complete it, so a second execution of the
	// same call id never overwrites the first one's evidence.
	AttemptID string `json:"attemptId,omitempty" dynamodbav:"attemptId,omitempty"`
	Tool      string `json:"tool" dynamodbav:"tool"`
	Source    string `json:"source" dynamodbav:"source"` // envelope | agentcore | jsonrpc | unknown

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
	CallerIssuer     string `json:"callerIssuer,omitempty" dynamodbav:"callerIssuer,omitempty"`
	CallerClientID   string `json:"callerClientId,omitempty" dynamodbav:"callerClientId,omitempty"`
	CallerIP         string `json:"callerIp,omitempty" dynamodbav:"callerIp,omitempty"`
	CallerUserAgent  string `json:"callerUserAgent,omitempty" dynamodbav:"callerUserAgent,omitempty"`
	// UnverifiedCaller is who a refused call claimed to be ("subject" or
	// "subject@issuer"): evidence of an attempt, never identity, and never
	// indexed as a caller.
	UnverifiedCaller string `json:"unverifiedCaller,omitempty" dynamodbav:"unverifiedCaller,omitempty"`
	// CallerRoleSession is an assumed IAM role's session name: chosen by
	// the caller, recorded beside the subject (the role), never as it.
	CallerRoleSession string `json:"callerRoleSession,omitempty" dynamodbav:"callerRoleSession,omitempty"`
	Tenant            string `json:"tenant,omitempty" dynamodbav:"tenant,omitempty"`
	// TaskID is the task the call ran (the MCP Tasks extension), if any.
	TaskID string `json:"taskId,omitempty" dynamodbav:"taskId,omitempty"`
	// Cancelled: the caller cancelled the call while it ran.
	Cancelled bool   `json:"cancelled,omitempty" dynamodbav:"cancelled,omitempty"`
	SessionID string `json:"sessionId,omitempty" dynamodbav:"sessionId,omitempty"`

	// Trace: span = the call's X-Ray subsegment id (and its OTLP span id);
	// parent = the trace header's Parent; trace = its Root. Without an
	// X-Ray header a valid W3C traceparent in _meta is the parent, in X-Ray
	// spelling (docs/tracing.md); with one, LinkedTraceparent keeps it as a
	// link.
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
	// Outcome is OutcomeUnknown when the call was answered without knowing
	// whether it took effect (see OutcomeUnknown).
	Outcome string `json:"outcome,omitempty" dynamodbav:"outcome,omitempty"`
	// LateOutcome ("ok" or "error"), LateErrorCode and FinishedAt are added
	// to a final row when a handler that outlived the call finishes after
	// all, while its process is still alive.
	LateOutcome   string     `json:"lateOutcome,omitempty" dynamodbav:"lateOutcome,omitempty"`
	LateErrorCode string     `json:"lateErrorCode,omitempty" dynamodbav:"lateErrorCode,omitempty"`
	FinishedAt    *time.Time `json:"finishedAt,omitempty" dynamodbav:"finishedAt,omitempty"`

	// Arguments are the raw call arguments; the Auditor sanitizes them into
	// ArgsPreview and never stores them as given.
	Arguments     json.RawMessage `json:"-" dynamodbav:"-"`
	ArgsPreview   string          `json:"argsPreview,omitempty" dynamodbav:"argsPreview,omitempty"`
	ArgsTruncated bool            `json:"argsTruncated,omitempty" dynamodbav:"argsTruncated,omitempty"`
	ResultBytes   int             `json:"resultBytes" dynamodbav:"resultBytes"`

	// What the row proves of the bytes (decision 0037): the size and hex
	// SHA-256 of the arguments in their canonical form — what the call
	// token's argument digest covers — and of the result as the function
	// serialized it (ResultBytes), whether it was answered inline or
	// stored; and the object version each was stored as, when it was (the
	// claim check). A stored result's SHA-256 covers the references of the
	// blobs stored beside it, each of which names its bytes' SHA-256.
	ArgsBytes    int64   `json:"argsBytes,omitempty" dynamodbav:"argsBytes,omitempty"`
	ArgsSHA256   string  `json:"argsSha256,omitempty" dynamodbav:"argsSha256,omitempty"`
	ArgsObject   *Object `json:"argsObject,omitempty" dynamodbav:"argsObject,omitempty"`
	ResultSHA256 string  `json:"resultSha256,omitempty" dynamodbav:"resultSha256,omitempty"`
	ResultObject *Object `json:"resultObject,omitempty" dynamodbav:"resultObject,omitempty"`
	// ReceivedArgs and Result are the raw bytes the two digests are of,
	// never stored: the Auditor records their size and SHA-256 when it
	// writes the row (after the answer, in the after-response mode), unless
	// ArgsSHA256 / ResultSHA256 are set already (a stored payload's come
	// from its reference). ReceivedArgs are the arguments as the call
	// brought them, before any hook replaced them; an empty, non-nil value
	// stands for absent arguments (digested as {}).
	ReceivedArgs json.RawMessage `json:"-" dynamodbav:"-"`
	Result       json.RawMessage `json:"-" dynamodbav:"-"`

	Dimensions map[string]string `json:"dimensions,omitempty" dynamodbav:"dimensions,omitempty"`

	LambdaRequestID string `json:"lambdaRequestId,omitempty" dynamodbav:"lambdaRequestId,omitempty"`
	FunctionName    string `json:"functionName,omitempty" dynamodbav:"functionName,omitempty"`
	FunctionVersion string `json:"functionVersion,omitempty" dynamodbav:"functionVersion,omitempty"`
	ColdStart       bool   `json:"coldStart,omitempty" dynamodbav:"coldStart,omitempty"`
	Destructive     bool   `json:"destructive,omitempty" dynamodbav:"destructive,omitempty"`

	// ExpiresAt is the TTL attribute (epoch seconds).
	ExpiresAt int64 `json:"expiresAt,omitempty" dynamodbav:"expiresAt,omitempty"`
}

// Object is one stored object version: where a call's stored arguments or
// result are, in the payloads bucket.
type Object struct {
	Bucket    string `json:"bucket" dynamodbav:"bucket"`
	Key       string `json:"key" dynamodbav:"key"`
	VersionID string `json:"versionId,omitempty" dynamodbav:"versionId,omitempty"`
}

// fillDigests records the size and SHA-256 of the raw arguments and result
// a row carries, where its writer has not.
func fillDigests(r *Row) {
	if r.ArgsSHA256 == "" && r.ReceivedArgs != nil {
		c := calltoken.Canonical(r.ReceivedArgs)
		sum := sha256.Sum256(c)
		r.ArgsBytes, r.ArgsSHA256 = int64(len(c)), hex.EncodeToString(sum[:])
	}
	if r.ResultSHA256 == "" && r.Result != nil {
		sum := sha256.Sum256(r.Result)
		r.ResultBytes, r.ResultSHA256 = len(r.Result), hex.EncodeToString(sum[:])
	}
}

// KeyAttribute is the audit table's partition key attribute.
const KeyAttribute = "rowKey"

// Key is the row's partition key, "<writer>#<callId>": every row a writer
// puts starts with its own name, which is what its IAM policy may write.
func (r *Row) Key() string { return RowKey(r.writerName(), r.CallID) }

// RowKey is the partition key of writer's row of call callID.
func RowKey(writer, callID string) string { return writer + "#" + callID }

func (r *Row) writerName() string {
	if r.Writer != "" {
		return r.Writer
	}
	return r.Tool
}
