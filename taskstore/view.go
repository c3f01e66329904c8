package taskstore

import (
	"encoding/json"
	"time"
)

// Wire values of resultType.
const (
	ResultTypeTask     = "task"
	ResultTypeComplete = "complete"
)

// View is a task as the Tasks extension puts it on the wire: the flat
// CreateTaskResult ([Task.Created]) or the tasks/get result
// ([Task.Detailed]). The gateway may add _meta; it never sees the owner or
// the request state here.
type View struct {
	ResultType    string `json:"resultType,omitempty"`
	TaskID        string `json:"taskId"`
	Status        Status `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	// CreatedAt and LastUpdatedAt are ISO 8601 (RFC 3339, UTC, milliseconds).
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	// TTLMs is always present: a number, or null for an unlimited task.
	TTLMs          *int64                     `json:"ttlMs"`
	PollIntervalMs *int64                     `json:"pollIntervalMs,omitempty"`
	InputRequests  map[string]json.RawMessage `json:"inputRequests,omitempty"`
	Result         json.RawMessage            `json:"result,omitempty"`
	Error          *RPCError                  `json:"error,omitempty"`
}

// wireTime is the ISO 8601 form of createdAt and lastUpdatedAt.
const wireTime = "2006-01-02T15:04:05.000Z07:00"

// Created is the CreateTaskResult: resultType "task" and the task's own
// fields, never inputRequests, result or error.
func (t *Task) Created() View {
	v := t.base()
	v.ResultType = ResultTypeTask
	return v
}

// Detailed is the tasks/get result: resultType "complete", plus
// inputRequests when input_required, result when completed, error when
// failed.
func (t *Task) Detailed() View {
	v := t.base()
	v.ResultType = ResultTypeComplete
	switch t.Status {
	case StatusInputRequired:
		v.InputRequests = t.InputRequests
	case StatusCompleted:
		v.Result = t.Result
	case StatusFailed:
		v.Error = t.Error
	}
	return v
}

func (t *Task) base() View {
	v := View{
		TaskID:        t.ID,
		Status:        t.Status,
		StatusMessage: t.StatusMessage,
		CreatedAt:     t.CreatedAt.UTC().Format(wireTime),
		LastUpdatedAt: t.LastUpdatedAt.UTC().Format(wireTime),
	}
	if t.TTL > 0 {
		v.TTLMs = millis(t.TTL)
	}
	if t.PollInterval > 0 {
		v.PollIntervalMs = millis(t.PollInterval)
	}
	return v
}

func millis(d time.Duration) *int64 {
	ms := d.Milliseconds()
	return &ms
}
