package taskstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// errNoRunID: a run-scoped write without a run id is a programming error.
var errNoRunID = errors.New("taskstore: empty run id")

// Finish records a run's outcome: completed{result}, failed{error} or
// input_required{inputRequests, sealed requestState}. It is conditioned on
// the task being working and held by runID, so a cancelled task stays
// cancelled ([ErrCancelled]), a task held by another run is untouched
// ([ErrClaimed]) and of two Finishes of one run the second gets
// [ErrNotWorking] (unless the first was input_required and an update
// already resumed the task, which clears the holder: [ErrClaimed]).
//
// An outcome larger than Options.MaxPayloadBytes is recorded instead as
// failed with a JSON-RPC -32603 error naming the limit, and Finish returns
// an error wrapping [ErrTooLarge] for the caller's audit.
func (s *Store) Finish(ctx context.Context, id, runID string, o Outcome) error {
	if runID == "" {
		return errNoRunID
	}
	set, values, err := outcomeValues(o)
	if err != nil {
		return err
	}
	var tooLarge error
	if n := o.size(); n > s.opts.MaxPayloadBytes {
		tooLarge = fmt.Errorf("%w: the %s of task %s is %d bytes, above the %s limit", ErrTooLarge, o.Status.payload(), id, n, s.limit())
		e := RPCError{Code: codeInternalError, Message: fmt.Sprintf("the tool's %s is %d bytes, above the %s limit of a task", o.Status.payload(), n, s.limit())}
		if set, values, err = outcomeValues(Failed(e)); err != nil {
			return err
		}
	}
	if _, err := s.applyWhileWorking(ctx, update{id: id, expr: "SET " + set + ", " + touched, cond: heldByRun, values: values}, runID); err != nil {
		return err
	}
	return tooLarge
}

// codeInternalError is JSON-RPC's -32603.
const codeInternalError = -32603

// outcomeValues is the SET clause and values that record o.
func outcomeValues(o Outcome) (string, map[string]types.AttributeValue, error) {
	values := map[string]types.AttributeValue{":status": str(string(o.Status))}
	switch o.Status {
	case StatusCompleted:
		switch {
		case len(o.ResultRef) > 0:
			var ref json.RawMessage
			if err := json.Unmarshal(o.ResultRef, &ref); err != nil || len(ref) == 0 || ref[0] != '{' {
				return "", nil, errors.New("taskstore: a result reference must be a JSON object")
			}
			var b bytes.Buffer
			if err := json.Compact(&b, o.ResultRef); err != nil {
				return "", nil, fmt.Errorf("taskstore: encoding the result reference: %w", err)
			}
			values[":result"] = str(storedResultPrefix + b.String() + "}")
		case len(o.Result) == 0:
			return "", nil, errors.New("taskstore: a completed outcome needs a result")
		default:
			values[":result"] = str(string(o.Result))
		}
		return "#status = :status, #result = :result", values, nil
	case StatusFailed:
		if o.Error == nil {
			return "", nil, errors.New("taskstore: a failed outcome needs an error")
		}
		b, err := json.Marshal(o.Error)
		if err != nil {
			return "", nil, fmt.Errorf("taskstore: encoding error: %w", err)
		}
		values[":error"] = str(string(b))
		return "#status = :status, #error = :error", values, nil
	case StatusInputRequired:
		if len(o.InputRequests) == 0 {
			return "", nil, errors.New("taskstore: an input_required outcome needs input requests")
		}
		b, err := json.Marshal(o.InputRequests)
		if err != nil {
			return "", nil, fmt.Errorf("taskstore: encoding input requests: %w", err)
		}
		values[":inputRequests"] = str(string(b))
		values[":requestState"] = &types.AttributeValueMemberB{Value: append([]byte{}, o.RequestState...)}
		return "#status = :status, #inputRequests = :inputRequests, #requestState = :requestState", values, nil
	}
	return "", nil, fmt.Errorf("taskstore: %q is not an outcome", o.Status)
}

// size is how many bytes o adds to the item.
func (o Outcome) size() int {
	n := len(o.Result) + len(o.ResultRef) + len(o.RequestState)
	if o.Error != nil {
		n += len(o.Error.Message) + len(o.Error.Data)
	}
	for k, v := range o.InputRequests {
		n += len(k) + len(v)
	}
	return n
}

// payload names what an outcome of status s stores, for error messages.
func (s Status) payload() string {
	switch s {
	case StatusCompleted:
		return "result"
	case StatusFailed:
		return "error"
	}
	return "input requests"
}

// SetStatusMessage sets the statusMessage of a working task held by runID
// (how a task reports progress: the extension has no progress
// notifications for tasks). The caller throttles; errors as for Finish.
func (s *Store) SetStatusMessage(ctx context.Context, id, runID, message string) error {
	if runID == "" {
		return errNoRunID
	}
	_, err := s.applyWhileWorking(ctx, update{
		id:     id,
		expr:   "SET #statusMessage = :message, " + touched,
		cond:   heldByRun,
		values: map[string]types.AttributeValue{":message": str(message)},
	}, runID)
	return err
}

// Abandon records a working task as failed with e whichever run holds it:
// for a run that crashed on its last attempt (an on-failure destination, or
// the gateway noticing a task working past its run deadline). A task that
// is no longer working is left alone: [ErrCancelled] or [ErrNotWorking].
func (s *Store) Abandon(ctx context.Context, id string, e RPCError) error {
	set, values, err := outcomeValues(Failed(e))
	if err != nil {
		return err
	}
	_, err = s.applyWhileWorking(ctx, update{
		id:     id,
		expr:   "SET " + set + ", " + touched,
		cond:   "#status = :working AND #expiresAt > :now",
		values: values,
	}, "")
	return err
}
