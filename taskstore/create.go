package taskstore

import "context"

// Create writes a new working task for in.Owner and returns it. The write
// is conditional on the id being new, and durable before Create returns, so
// a tasks/get that follows the CreateTaskResult always finds the task.
// Params larger than Options.MaxPayloadBytes → [ErrTooLarge], nothing
// written.
func (s *Store) Create(ctx context.Context, in NewTask) (*Task, error) {
	return nil, errUnimplemented
}
