package audit

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
)

// Environment variables read by [NewFromEnv].
const (
	EnvTable           = "MCPFN_AUDIT_TABLE"
	EnvEntityDimension = "MCPFN_AUDIT_ENTITY_DIMENSION"
	EnvRetentionDays   = "MCPFN_AUDIT_RETENTION_DAYS"
	EnvXRayDaemon      = "AWS_XRAY_DAEMON_ADDRESS"
)

// NewFromEnv returns the Auditor a Lambda function's environment configures,
// or nil, nil when MCPFN_AUDIT_TABLE is unset (auditing off). Rows expire
// after MCPFN_AUDIT_RETENTION_DAYS (default 90) and MCPFN_AUDIT_ENTITY_DIMENSION
// names the indexed entity dimension (default entityId). The DynamoDB
// client comes from config.LoadDefaultConfig, so credentials, region and
// AWS_ENDPOINT_URL_DYNAMODB (DynamoDB Local) are honoured. Spans go to
// AWS_XRAY_DAEMON_ADDRESS when it is set, which Lambda does for functions
// with tracing enabled; without it no spans are emitted.
func NewFromEnv(ctx context.Context) (*Auditor, error) {
	return NewFrom(ctx, os.Getenv)
}

// NewFrom is NewFromEnv over any variable source (the gateway's
// configuration parser reads the template's variables through it locally).
// The AWS configuration still comes from the process environment.
func NewFrom(ctx context.Context, getenv func(string) string) (*Auditor, error) {
	table := getenv(EnvTable)
	if table == "" {
		return nil, nil
	}
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("audit: aws config: %w", err)
	}
	cfg := Config{
		Table:           table,
		Client:          NewDynamoClient(awsCfg),
		EntityDimension: getenv(EnvEntityDimension),
	}
	if v := getenv(EnvRetentionDays); v != "" {
		days, err := strconv.Atoi(v)
		if err != nil || days < 1 {
			return nil, fmt.Errorf("audit: %s=%q: want a whole number of days ≥ 1", EnvRetentionDays, v)
		}
		cfg.TTL = time.Duration(days) * 24 * time.Hour
	}
	if addr := getenv(EnvXRayDaemon); addr != "" {
		em, err := NewXRayEmitter(addr)
		if err != nil {
			return nil, err
		}
		cfg.Emitter = em
	}
	return New(cfg), nil
}
