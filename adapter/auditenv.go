package adapter

import "context"

// auditorFromEnv returns the auditor the environment configures, or nil.
func auditorFromEnv(ctx context.Context) (Recorder, error) {
	return nil, nil
}
