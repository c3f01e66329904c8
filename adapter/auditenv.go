package adapter

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/mcpfn/mcpfn/audit"
)

// auditorFromEnv returns the auditor the environment configures
// (MCPFN_AUDIT_TABLE, set by template.yaml), or nil when it configures none;
// its DynamoDB client is made from awsConfig's configuration.
func auditorFromEnv(ctx context.Context, awsConfig func() (aws.Config, error)) (Recorder, error) {
	a, err := audit.NewFromEnvWith(ctx, awsConfig)
	if err != nil || a == nil {
		// Never a typed nil inside the interface.
		return nil, err
	}
	return a, nil
}
