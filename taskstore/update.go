package taskstore

import (
	"context"
	"encoding/json"
)

// Update records tasks/update's inputResponses for owner's task id. Keys
// that are not pending requests of the current round, or that were answered
// before, are ignored, as is an update of a task that is not
// input_required (the ack is the same). When the update answers every
// pending request, the task moves to working, resume is true, and the
// returned task carries what the caller re-invokes the function with:
// [Task.RoundResponses], RequestState, Params, CallID. Of concurrent
// updates exactly one sees resume true. Unknown, expired or another
// owner's → [ErrNotFound].
func (s *Store) Update(ctx context.Context, owner, id string, responses map[string]json.RawMessage) (t *Task, resume bool, err error) {
	return nil, false, errUnimplemented
}
