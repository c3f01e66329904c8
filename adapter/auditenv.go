package adapter

import (
	"context"

	"github.com/mcpfn/mcpfn/audit"
)

// auditorFromEnv returns the auditor the environment configures
// (MCPFN_AUDIT_TABLE, set by template.yaml), or nil when it configures none.
func auditorFromEnv(ctx context.Context) (Recorder, error) {
	a, err := audit.NewFromEnv(ctx)
	if err != nil || a == nil {
		// Never a typed nil inside the interface.
		return nil, err
	}
	return a, nil
}
