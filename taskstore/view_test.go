package taskstore_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/taskstore"
)

func fixedTask(status taskstore.Status) *taskstore.Task {
	created := time.Date(2026, 12, 1, 4, 30, 0, 123_000_000, time.UTC)
	return &taskstore.Task{
		ID:             "abcdefghijklmnopqrstuv",
		Owner:          "jwt:alice",
		Tool:           "slow_compute",
		Function:       "fn",
		CallID:         "call-1",
		Status:         status,
		StatusMessage:  "page 2 of 3",
		CreatedAt:      created,
		LastUpdatedAt:  created.Add(1500 * time.Millisecond),
		TTL:            time.Hour,
		PollInterval:   time.Second,
		Params:         json.RawMessage(`{"arguments":{}}`),
		InputRequests:  map[string]json.RawMessage{"confirm": json.RawMessage(`{"method":"elicitation/create","params":{"message":"Delete?"}}`)},
		RequestState:   []byte("sealed"),
		InputResponses: map[string]json.RawMessage{"old": json.RawMessage(`{}`)},
		Result:         json.RawMessage(`{"content":[{"type":"text","text":"Hello"}]}`),
		Error:          &taskstore.RPCError{Code: -32603, Message: "boom"},
		RunID:          "req-1",
	}
}

// wire encodes v and decodes it back as generic JSON.
func wire(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func eqJSON(t *testing.T, what string, got map[string]any, want string) {
	t.Helper()
	var w map[string]any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, w) {
		g, _ := json.Marshal(got)
		t.Errorf("%s:\n got %s\nwant %s", what, g, want)
	}
}

// CreateTaskResult is flat: resultType "task" and the Task fields, never
// inputRequests, result, error, requestState or the owner (SEP-2663;
// tasks-lifecycle, tasks-wire-fields, tasks-request-state-removal).
func TestCreatedIsTheFlatCreateTaskResult(t *testing.T) {
	eqJSON(t, "Created", wire(t, fixedTask(taskstore.StatusWorking).Created()), `{
		"resultType": "task", "taskId": "abcdefghijklmnopqrstuv", "status": "working",
		"statusMessage": "page 2 of 3",
		"createdAt": "2026-12-01T04:30:00.123Z", "lastUpdatedAt": "2026-12-01T04:30:01.623Z",
		"ttlMs": 3600000, "pollIntervalMs": 1000}`)
}

// tasks/get: resultType "complete", and per status exactly one of
// inputRequests, result, error.
func TestDetailedIsTheTasksGetResult(t *testing.T) {
	base := `"resultType": "complete", "taskId": "abcdefghijklmnopqrstuv", "statusMessage": "page 2 of 3",
		"createdAt": "2026-12-01T04:30:00.123Z", "lastUpdatedAt": "2026-12-01T04:30:01.623Z",
		"ttlMs": 3600000, "pollIntervalMs": 1000`
	for status, extra := range map[taskstore.Status]string{
		taskstore.StatusWorking:       ``,
		taskstore.StatusCancelled:     ``,
		taskstore.StatusInputRequired: `, "inputRequests": {"confirm": {"method":"elicitation/create","params":{"message":"Delete?"}}}`,
		taskstore.StatusCompleted:     `, "result": {"content":[{"type":"text","text":"Hello"}]}`,
		taskstore.StatusFailed:        `, "error": {"code": -32603, "message": "boom"}`,
	} {
		eqJSON(t, string(status), wire(t, fixedTask(status).Detailed()), `{`+base+`, "status": "`+string(status)+`"`+extra+`}`)
	}
}

// ttlMs is always present: null for an unlimited task (the wire-fields
// scenario accepts a positive integer or null); pollIntervalMs is left
// out when unset; the old v1 names ttl/pollInterval never appear.
func TestViewTTLIsNullWhenUnlimited(t *testing.T) {
	task := fixedTask(taskstore.StatusWorking)
	task.TTL, task.PollInterval, task.StatusMessage = 0, 0, ""
	m := wire(t, task.Detailed())
	if v, ok := m["ttlMs"]; !ok || v != nil {
		t.Errorf("ttlMs = %v (present %v), want null", v, ok)
	}
	for _, k := range []string{"pollIntervalMs", "statusMessage", "ttl", "pollInterval", "requestState", "owner"} {
		if _, ok := m[k]; ok {
			t.Errorf("%s present: %v", k, m)
		}
	}
}

// A view built from a stored task reads the same: times in UTC with
// milliseconds, even when the store's clock is in another zone.
func TestViewTimesAreUTCWithMilliseconds(t *testing.T) {
	s, c := newStore(t, taskstore.Options{})
	c.t = time.Date(2026, 12, 1, 6, 0, 0, 5_000_000, time.FixedZone("CET", 3600))
	task := create(t, s)
	v := get(t, s, task.ID).Detailed()
	if v.CreatedAt != "2026-12-01T05:00:00.005Z" || v.LastUpdatedAt != v.CreatedAt {
		t.Errorf("createdAt %q lastUpdatedAt %q", v.CreatedAt, v.LastUpdatedAt)
	}
}
