package audit

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// Environment variables read by [NewFromEnv].
const (
	EnvTable           = "MCPFN_AUDIT_TABLE"
	EnvEntityDimension = "MCPFN_AUDIT_ENTITY_DIMENSION"
	EnvXRayDaemon      = "AWS_XRAY_DAEMON_ADDRESS"
)

// NewFromEnv returns the Auditor a Lambda function's environment configures,
// or nil, nil when MCPFN_AUDIT_TABLE is unset (auditing off). The DynamoDB
// client comes from config.LoadDefaultConfig, so credentials, region and
// AWS_ENDPOINT_URL_DYNAMODB (DynamoDB Local) are honoured. Spans go to
// AWS_XRAY_DAEMON_ADDRESS when it is set, which Lambda does for functions
// with tracing enabled; without it no spans are emitted.
func NewFromEnv(ctx context.Context) (*Auditor, error) {
	table := os.Getenv(EnvTable)
	if table == "" {
		return nil, nil
	}
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("audit: aws config: %w", err)
	}
	cfg := Config{
		Table:           table,
		Client:          dynamodb.NewFromConfig(awsCfg),
		EntityDimension: os.Getenv(EnvEntityDimension),
	}
	if addr := os.Getenv(EnvXRayDaemon); addr != "" {
		em, err := NewXRayEmitter(addr)
		if err != nil {
			return nil, err
		}
		cfg.Emitter = em
	}
	return New(cfg), nil
}
