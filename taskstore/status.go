package taskstore

// Status is a task's state, spelled as on the wire.
type Status string

// The states of the Tasks extension.
const (
	// StatusWorking: the task is running or about to be run.
	StatusWorking Status = "working"
	// StatusInputRequired: the tool asked for input (inputRequests); a
	// tasks/update that answers all of them moves the task back to working.
	StatusInputRequired Status = "input_required"
	// StatusCompleted: the tool returned a result, which may be a tool
	// error (isError) — the extension keeps "failed" for protocol errors.
	StatusCompleted Status = "completed"
	// StatusFailed: the call ended in a JSON-RPC error.
	StatusFailed Status = "failed"
	// StatusCancelled: a tasks/cancel arrived before the task ended.
	StatusCancelled Status = "cancelled"
)

// Terminal reports whether s is a final state, which no write changes.
func (s Status) Terminal() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusCancelled
}
