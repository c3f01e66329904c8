package taskstore

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// item is a task as stored. JSON values are stored as strings; times are
// epoch milliseconds, except expiresAt, the TTL attribute, which DynamoDB
// wants in epoch seconds.
type item struct {
	TaskID string `dynamodbav:"taskId"`
	// Owner is always written, even empty: conditions compare it, and an
	// absent attribute would fail "#owner = :owner" for the empty owner.
	Owner          string `dynamodbav:"owner"`
	Tool           string `dynamodbav:"tool,omitempty"`
	Function       string `dynamodbav:"function,omitempty"`
	CallID         string `dynamodbav:"callId,omitempty"`
	Status         string `dynamodbav:"status,omitempty"`
	StatusMessage  string `dynamodbav:"statusMessage,omitempty"`
	CreatedAt      int64  `dynamodbav:"createdAt,omitempty"`
	LastUpdatedAt  int64  `dynamodbav:"lastUpdatedAt,omitempty"`
	TTLMs          int64  `dynamodbav:"ttlMs,omitempty"`
	ExpiresAt      int64  `dynamodbav:"expiresAt"`
	PollIntervalMs int64  `dynamodbav:"pollIntervalMs,omitempty"`
	Params         string `dynamodbav:"params,omitempty"`
	InputRequests  string `dynamodbav:"inputRequests,omitempty"`
	RequestState   []byte `dynamodbav:"requestState,omitempty"`
	Answered       string `dynamodbav:"answered,omitempty"`
	Result         string `dynamodbav:"result,omitempty"`
	Error          string `dynamodbav:"error,omitempty"`
	RunID          string `dynamodbav:"runId,omitempty"`
	Attempts       int    `dynamodbav:"attempts,omitempty"`
	Version        int64  `dynamodbav:"version"`
	// MarkedAt is set on cancel markers only (epoch milliseconds).
	MarkedAt int64 `dynamodbav:"markedAt,omitempty"`
	// Seal is the gateway's MAC over the fixed fields (seal.go).
	Seal []byte `dynamodbav:"seal,omitempty"`
}

// The TasksTable's hash key (type S) and TTL attribute, as template.yaml
// must declare them; templatetest checks it does.
const (
	KeyAttribute = "taskId"
	TTLAttribute = "expiresAt"
)

// RunAttributes are the attributes a task's run names (the key, what
// Claim, SetStatusMessage and Finish set, and what their conditions read):
// the dynamodb:Attributes a tool function's role may write on its own
// tasks (template.yaml; templatetest holds the two together). Owner, tool,
// function, call id, params, the seal and the answers are not among them:
// only the gateway writes those.
var RunAttributes = []string{
	"attempts", "error", "expiresAt", "inputRequests", "lastUpdatedAt", "requestState",
	"result", "runId", "status", "statusMessage", "taskId", "version",
}

// attrID is the table's key. Expressions name the other attributes as
// #name, after the dynamodbav tags above (see attributeNames).
const attrID = KeyAttribute

// expired reports whether an item with expiresAt (epoch seconds) is past
// its lifetime at now. Conditions use the same rule: expiresAt > now.
func expired(expiresAt int64, now time.Time) bool { return expiresAt <= now.Unix() }

// expirySeconds rounds t up to the second, so a task never expires early.
func expirySeconds(t time.Time) int64 {
	s := t.Unix()
	if t.Nanosecond() > 0 {
		s++
	}
	return s
}

func decodeItem(av map[string]types.AttributeValue) (*item, error) {
	var it item
	if err := attributevalue.UnmarshalMap(av, &it); err != nil {
		return nil, fmt.Errorf("taskstore: decoding item: %w", err)
	}
	return &it, nil
}

// task turns a stored item into a Task.
func (it *item) task() (*Task, error) {
	t := &Task{
		ID:            it.TaskID,
		Owner:         it.Owner,
		Tool:          it.Tool,
		Function:      it.Function,
		CallID:        it.CallID,
		Status:        Status(it.Status),
		StatusMessage: it.StatusMessage,
		CreatedAt:     time.UnixMilli(it.CreatedAt).UTC(),
		LastUpdatedAt: time.UnixMilli(it.LastUpdatedAt).UTC(),
		TTL:           time.Duration(it.TTLMs) * time.Millisecond,
		ExpiresAt:     time.Unix(it.ExpiresAt, 0).UTC(),
		PollInterval:  time.Duration(it.PollIntervalMs) * time.Millisecond,
		RequestState:  it.RequestState,
		RunID:         it.RunID,
		Attempts:      it.Attempts,
		Version:       it.Version,
		seal:          it.Seal,
	}
	if it.Params != "" {
		t.Params = json.RawMessage(it.Params)
	}
	if it.Result != "" {
		t.Result = json.RawMessage(it.Result)
		if strings.HasPrefix(it.Result, storedResultPrefix) {
			// The run stored its result (claim check): the record holds
			// the reference only.
			var w storedResult
			if err := json.Unmarshal(t.Result, &w); err == nil && len(w.ResultRef) > 0 {
				t.Result, t.ResultRef = nil, w.ResultRef
			}
		}
	}
	if err := unmarshalIf(it.InputRequests, &t.InputRequests); err != nil {
		return nil, err
	}
	if err := unmarshalIf(it.Answered, &t.InputResponses); err != nil {
		return nil, err
	}
	if it.Error != "" {
		t.Error = new(RPCError)
		if err := json.Unmarshal([]byte(it.Error), t.Error); err != nil {
			return nil, fmt.Errorf("taskstore: decoding error of task %s: %w", it.TaskID, err)
		}
	}
	return t, nil
}

func unmarshalIf(s string, v any) error {
	if s == "" {
		return nil
	}
	if err := json.Unmarshal([]byte(s), v); err != nil {
		return fmt.Errorf("taskstore: decoding item: %w", err)
	}
	return nil
}
