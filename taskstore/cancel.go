package taskstore

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Cancel moves owner's task id to cancelled if it is working or
// input_required. A terminal task is left as it is and Cancel returns nil
// (tasks/cancel answers the same ack either way). Unknown, expired or
// another owner's → [ErrNotFound]. A run in progress learns of the
// cancellation through [Store.Watch]; its Finish then fails with
// [ErrCancelled] and the task stays cancelled. A sealed store reads the
// record first and cancels it only if it verifies ([ErrTampered]) and its
// seal is still the one it read.
func (s *Store) Cancel(ctx context.Context, owner, id string) error {
	values := map[string]types.AttributeValue{
		":cancelled":     str(string(StatusCancelled)),
		":owner":         str(owner),
		":working":       str(string(StatusWorking)),
		":inputRequired": str(string(StatusInputRequired)),
	}
	cond := "#owner = :owner AND #status IN (:working, :inputRequired) AND #expiresAt > :now"
	if s.sealer != nil {
		it, err := s.read(ctx, id)
		if err != nil {
			return err
		}
		if _, err := s.open(it, owner); err != nil {
			return err
		}
		cond += " AND #seal = :seal"
		values[":seal"] = &types.AttributeValueMemberB{Value: it.Seal}
	}
	now := s.now()
	_, err := s.apply(ctx, update{
		id:     id,
		expr:   "SET #status = :cancelled, " + touched,
		cond:   cond,
		values: stamp(now, values),
	})
	var lost *errCondition
	if errors.As(err, &lost) {
		old := lost.old
		if old == nil || old.Status == "" || old.Owner != owner || expired(old.ExpiresAt, now) {
			return ErrNotFound
		}
		if !s.verified(old) {
			return ErrTampered // changed since it was read
		}
		return nil // terminal: nothing to cancel
	}
	return err
}
