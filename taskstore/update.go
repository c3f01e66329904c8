package taskstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// updateAttempts bounds the read-merge-write loop of Update under
// concurrent updates of one task (each lost round means another update won).
const updateAttempts = 8

// Update records tasks/update's inputResponses for owner's task id. Keys
// that are not pending requests of the current round, or that were answered
// before, are ignored, as is an update of a task that is not
// input_required (the ack is the same). When the update answers every
// pending request, the task moves to working, resume is true, and the
// returned task carries what the caller re-invokes the function with:
// [Task.RoundResponses], RequestState, Params, CallID. Of concurrent
// updates exactly one sees resume true. Unknown, expired or another
// owner's → [ErrNotFound]; on a sealed store a record that does not verify
// → [ErrTampered], unchanged.
func (s *Store) Update(ctx context.Context, owner, id string, responses map[string]json.RawMessage) (t *Task, resume bool, err error) {
	for range updateAttempts {
		t, resume, err = s.updateOnce(ctx, owner, id, responses)
		var lost *errCondition
		if !errors.As(err, &lost) {
			return t, resume, err
		}
	}
	return nil, false, fmt.Errorf("taskstore: task %s: %d concurrent updates in a row lost", id, updateAttempts)
}

// updateOnce merges responses into the task as read, conditioned on nothing
// having changed since (version); a lost condition means a concurrent
// write, and Update reads again.
func (s *Store) updateOnce(ctx context.Context, owner, id string, responses map[string]json.RawMessage) (*Task, bool, error) {
	t, err := s.Get(ctx, owner, id)
	if err != nil || t.Status != StatusInputRequired {
		return t, false, err
	}
	answered := maps.Clone(t.InputResponses)
	if answered == nil {
		answered = map[string]json.RawMessage{}
	}
	added := 0
	for k, v := range responses {
		if _, pending := t.InputRequests[k]; !pending {
			continue
		}
		if _, done := answered[k]; done {
			continue
		}
		answered[k] = v
		added++
	}
	if added == 0 {
		return t, false, nil
	}
	resume := true
	for k := range t.InputRequests {
		if _, ok := answered[k]; !ok {
			resume = false
		}
	}
	b, err := json.Marshal(answered)
	if err != nil {
		return nil, false, fmt.Errorf("taskstore: encoding input responses: %w", err)
	}
	if len(b) > s.opts.MaxPayloadBytes {
		return nil, false, fmt.Errorf("%w: input responses of %d bytes exceed the %s limit", ErrTooLarge, len(b), s.limit())
	}
	expr := "SET #answered = :answered, " + touched
	if resume {
		// The next round is a new invocation with a new request id: it
		// must be able to claim the task.
		expr = "SET #answered = :answered, #status = :working, " + touched + " REMOVE #runId, #attempts"
	}
	values := map[string]types.AttributeValue{
		":answered":      str(string(b)),
		":working":       str(string(StatusWorking)),
		":version":       num(t.Version),
		":inputRequired": str(string(StatusInputRequired)),
		":owner":         str(owner),
	}
	cond := "#version = :version AND #status = :inputRequired AND #owner = :owner AND #expiresAt > :now"
	if s.sealer != nil {
		// The record written is the one that verified.
		cond += " AND #seal = :seal"
		values[":seal"] = &types.AttributeValueMemberB{Value: t.seal}
	}
	it, err := s.apply(ctx, update{id: id, expr: expr, cond: cond, values: stamp(s.now(), values)})
	if err != nil {
		return nil, false, err
	}
	t, err = s.open(it, owner)
	return t, resume, err
}
