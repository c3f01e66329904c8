package taskstore

import "context"

// Cancel moves owner's task id to cancelled if it is working or
// input_required. A terminal task is left as it is and Cancel returns nil
// (tasks/cancel answers the same ack either way). Unknown, expired or
// another owner's → [ErrNotFound]. A run in progress learns of the
// cancellation through [Store.Watch]; its Finish then fails with
// [ErrCancelled] and the task stays cancelled.
func (s *Store) Cancel(ctx context.Context, owner, id string) error {
	return errUnimplemented
}
