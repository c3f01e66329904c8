package taskstore

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Claim binds a working task to one function run and returns the task with
// Attempts incremented. runID is the Lambda request id of the run.
//
// Lambda's asynchronous retries reuse the request id, so a claim with the
// runID that already holds the task succeeds again: it is the same
// invocation retried, and Attempts > 1 tells the adapter so (a destructive
// call is then not re-run: decision 0016). A claim with a different runID
// while another run holds the task → [ErrClaimed]: a second event for the
// same task (e.g. the Invoke API call itself retried) must exit without
// touching it. Claims of a cancelled task → [ErrCancelled], of any other
// non-working task → [ErrNotWorking]; unknown or expired → [ErrNotFound].
// After tasks/update resumes a task the holder is cleared, so the next
// round's run (a new request id) can claim it.
func (s *Store) Claim(ctx context.Context, id, runID string) (*Task, error) {
	if runID == "" {
		return nil, errNoRunID
	}
	it, err := s.applyWhileWorking(ctx, update{
		id:     id,
		expr:   "SET #runId = :run, #attempts = if_not_exists(#attempts, :zero) + :one, #version = #version + :one",
		cond:   "#status = :working AND #expiresAt > :now AND (attribute_not_exists(#runId) OR #runId = :run)",
		values: map[string]types.AttributeValue{":zero": num(0)},
	}, runID)
	if err != nil {
		return nil, err
	}
	return it.task()
}
