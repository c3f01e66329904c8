package handlers

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mcpfn/mcpfn/internal/ddbcrc"
)

// TableEnv names the environment variable holding the broadcasts table's
// name; template.yaml sets it on every tool function.
const TableEnv = "MCPFN_BROADCASTS_TABLE"

// StoreFromEnv returns a store over the table named by MCPFN_BROADCASTS_TABLE,
// with the AWS SDK's default configuration (region, credentials, and
// AWS_ENDPOINT_URL_DYNAMODB, which points it at DynamoDB Local).
func StoreFromEnv(ctx context.Context) (*Store, error) {
	table := os.Getenv(TableEnv)
	if table == "" {
		return nil, fmt.Errorf("handlers: %s is not set; it names the broadcasts table", TableEnv)
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("handlers: loading AWS configuration: %w", err)
	}
	return NewStore(dynamodb.NewFromConfig(cfg, ddbcrc.Option), table), nil
}

// MustStoreFromEnv is StoreFromEnv for a function's main. It panics, which
// Lambda reports as an init error: a function without its table cannot
// serve a single call, and failing at init says so before the first one.
func MustStoreFromEnv() *Store {
	s, err := StoreFromEnv(context.Background())
	if err != nil {
		panic(err)
	}
	return s
}
