package taskstore

import (
	"encoding/json"
	"time"
)

// Task is a stored task as the gateway and the adapter see it. The owner and
// the sealed request state are here for the store's users; the wire views
// ([Task.Created], [Task.Detailed]) leave them out.
type Task struct {
	// ID is "<tool>.<128 random bits, base64url>" (id.go): unguessable,
	// as the extension requires, and keyed under its tool's prefix.
	ID string
	// Owner is the caller key the gateway supplied at creation; every
	// caller-facing operation compares it.
	Owner string
	// Tool is the MCP tool name, Function the Lambda function that runs it.
	Tool     string
	Function string
	// CallID is the call id the function's audit row and its at-most-once
	// guard (decision 0016) key on; it stays the same across rounds.
	CallID string

	Status        Status
	StatusMessage string
	CreatedAt     time.Time
	LastUpdatedAt time.Time
	// TTL is how long the task lives from CreatedAt (ttlMs on the wire);
	// ExpiresAt = CreatedAt + TTL.
	TTL       time.Duration
	ExpiresAt time.Time
	// PollInterval is the interval the client is told to poll at
	// (pollIntervalMs); zero leaves it out.
	PollInterval time.Duration

	// Params is the tools/call params JSON (name, arguments, _meta) the
	// function is invoked with. The gateway must not put a credential here.
	Params json.RawMessage

	// InputRequests are the current round's requests (key → request, e.g.
	// {"method":"elicitation/create","params":{…}}), set when the task
	// entered input_required.
	InputRequests map[string]json.RawMessage
	// RequestState is the adapter's sealed multi-round state of that round;
	// it is never put on the wire.
	RequestState []byte
	// InputResponses holds every answer tasks/update accepted over the
	// task's lifetime (keys are unique per task); see RoundResponses.
	InputResponses map[string]json.RawMessage

	// Result is the CallToolResult JSON of a completed task.
	Result json.RawMessage
	// ResultRef, instead of Result, is the reference (a wire.ObjectRef as
	// JSON) to the result the run stored in the payloads bucket because it
	// was too large for the record (the claim check, decision 0037). Like
	// everything a run writes, it is untrusted: the gateway checks that it
	// names the task's own tool's results before it reads it.
	ResultRef json.RawMessage
	// Error is the JSON-RPC error of a failed task.
	Error *RPCError

	// RunID is the run (the Lambda request id) that claimed the task;
	// Attempts counts its claims, so a value above 1 means a retried run.
	// Both start afresh with each round of a multi-round task.
	RunID    string
	Attempts int
	// Version increases with every write.
	Version int64

	// seal is the record's seal as read (seal.go), for the conditions of
	// writes that act on a verified record.
	seal []byte
}

// RPCError is a JSON-RPC error object, the "error" of a failed task.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// NewTask is what [Store.Create] needs; the store fills in the rest.
type NewTask struct {
	// ID is the task's id, from [NewID] of Tool; empty: Create makes one.
	// (The gateway makes it first, to reserve the task's slot under it.)
	ID       string
	Owner    string
	Tool     string
	Function string
	CallID   string
	Params   json.RawMessage
	// TTL and PollInterval override the store's defaults when positive.
	TTL          time.Duration
	PollInterval time.Duration
}

// Outcome is what a run records with [Store.Finish]; build it with
// [Completed], [Failed] or [InputRequired].
type Outcome struct {
	Status        Status
	Result        json.RawMessage
	ResultRef     json.RawMessage
	Error         *RPCError
	InputRequests map[string]json.RawMessage
	RequestState  []byte
}

// Completed is the outcome of a tool that returned a CallToolResult (an
// isError result included).
func Completed(result json.RawMessage) Outcome {
	return Outcome{Status: StatusCompleted, Result: result}
}

// CompletedRef is Completed for a result the run stored in the payloads
// bucket: ref is its reference (a wire.ObjectRef as JSON), which the record
// holds in place of the result.
func CompletedRef(ref json.RawMessage) Outcome {
	return Outcome{Status: StatusCompleted, ResultRef: ref}
}

// storedResult is how the record's result attribute holds a reference:
// {"resultRef":{…}}, which no CallToolResult is (every one has content).
type storedResult struct {
	ResultRef json.RawMessage `json:"resultRef"`
}

// storedResultPrefix starts the result attribute of a stored result, as
// outcomeValues writes it.
const storedResultPrefix = `{"resultRef":`

// Failed is the outcome of a call that ended in a JSON-RPC error.
func Failed(e RPCError) Outcome {
	return Outcome{Status: StatusFailed, Error: &e}
}

// InputRequired is the outcome of a round that needs input: the requests
// the client must answer with tasks/update and the sealed state the next
// round resumes from.
func InputRequired(requests map[string]json.RawMessage, requestState []byte) Outcome {
	return Outcome{Status: StatusInputRequired, InputRequests: requests, RequestState: requestState}
}

// Completes reports whether responses, with the answers already accepted,
// answer every request of the task's current round: the tasks/update that
// sends them resumes the task (unless another update does first).
func (t *Task) Completes(responses map[string]json.RawMessage) bool {
	if t.Status != StatusInputRequired {
		return false
	}
	for k := range t.InputRequests {
		_, before := t.InputResponses[k]
		_, now := responses[k]
		if !before && !now {
			return false
		}
	}
	return true
}

// RoundResponses returns the answers to the current round's requests: what
// the next run is invoked with as inputResponses.
func (t *Task) RoundResponses() map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(t.InputRequests))
	for k := range t.InputRequests {
		if v, ok := t.InputResponses[k]; ok {
			out[k] = v
		}
	}
	return out
}
