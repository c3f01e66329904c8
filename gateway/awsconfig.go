package gateway

import (
	"context"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/mcpfn/mcpfn/calltoken"
)

// awsClients are the AWS clients the gateway builds itself when its Config
// brings none: one AWS configuration loaded once, at the first need (the
// one ConfigFrom loaded for the audit and tasks tables, if it did), and one
// Secrets Manager client for the call keys and the session key. Each load
// reads the environment and the shared files and builds an HTTP client and
// a credentials cache of its own; the cold start made four, then two
// (issue 21).
type awsClients struct {
	config  func() (aws.Config, error)
	secrets func() (calltoken.SecretsAPI, error)
}

func newAWSClients(ctx context.Context, cfg *Config) *awsClients {
	c := &awsClients{config: cfg.awsConfig}
	if c.config == nil {
		c.config = loadAWSConfigOnce(ctx)
	}
	c.secrets = sync.OnceValues(func() (calltoken.SecretsAPI, error) {
		if cfg.KeySecretsAPI != nil {
			return cfg.KeySecretsAPI, nil
		}
		awsCfg, err := c.config()
		if err != nil {
			return nil, err
		}
		return secretsmanager.NewFromConfig(awsCfg), nil
	})
	return c
}

// loadAWSConfigOnce returns the default AWS configuration, loaded at the
// first call only.
func loadAWSConfigOnce(ctx context.Context) func() (aws.Config, error) {
	return sync.OnceValues(func() (aws.Config, error) {
		awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
		if err != nil {
			return aws.Config{}, fmt.Errorf("gateway: AWS configuration: %w", err)
		}
		return awsCfg, nil
	})
}
