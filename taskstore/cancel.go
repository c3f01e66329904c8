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
// [ErrCancelled] and the task stays cancelled.
func (s *Store) Cancel(ctx context.Context, owner, id string) error {
	now := s.now()
	_, err := s.apply(ctx, update{
		id:   id,
		expr: "SET #status = :cancelled, " + touched,
		cond: "#owner = :owner AND #status IN (:working, :inputRequired) AND #expiresAt > :now",
		values: stamp(now, map[string]types.AttributeValue{
			":cancelled":     str(string(StatusCancelled)),
			":owner":         str(owner),
			":working":       str(string(StatusWorking)),
			":inputRequired": str(string(StatusInputRequired)),
		}),
	})
	var lost *errCondition
	if errors.As(err, &lost) {
		old := lost.old
		if old == nil || old.Status == "" || old.Owner != owner || expired(old.ExpiresAt, now) {
			return ErrNotFound
		}
		return nil // terminal: nothing to cancel
	}
	return err
}
