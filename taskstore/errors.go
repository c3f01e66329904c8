package taskstore

import "errors"

var (
	// ErrNotFound: no such task, the task expired, or it belongs to
	// another owner — callers must not tell these apart (the extension
	// answers -32602 for all three).
	ErrNotFound = errors.New("taskstore: task not found")

	// ErrCancelled: the task was cancelled; a run must stop and must not
	// write an outcome.
	ErrCancelled = errors.New("taskstore: task cancelled")

	// ErrNotWorking: the task is in a state other than working and other
	// than cancelled (completed, failed or input_required), so it cannot be
	// claimed, finished or given a status message.
	ErrNotWorking = errors.New("taskstore: task is not working")

	// ErrClaimed: another run (a different run id) holds the task.
	ErrClaimed = errors.New("taskstore: task claimed by another run")

	// ErrTampered: the owner's task record does not verify against the
	// seal the gateway wrote at creation (seal.go): something other than
	// the gateway changed its fixed fields, or made it up. A sealed store
	// returns it instead of the task; nothing may act on the record.
	ErrTampered = errors.New("taskstore: the task record does not verify (changed outside the gateway)")

	// ErrTooLarge: a value would not fit the item (see Options.MaxPayloadBytes).
	// [Store.Finish] returns it wrapped after it recorded the task as
	// failed; [Store.Create] returns it without writing.
	ErrTooLarge = errors.New("taskstore: value too large for a task item")
)
