package taskstore

// SetAfterPoll installs a hook that runs after every poll of Watch and
// WatchCall, so tests can count polls instead of sleeping.
func (s *Store) SetAfterPoll(f func()) { s.afterPoll = f }

// MarkerKey is the table key of a cancel marker.
func MarkerKey(owner, requestKey string) string { return markerKey(owner, requestKey) }
