package taskstore

import "context"

// Get returns owner's task id, read consistently. An unknown id, an expired
// task and another owner's task are all [ErrNotFound].
func (s *Store) Get(ctx context.Context, owner, id string) (*Task, error) {
	return nil, errUnimplemented
}
