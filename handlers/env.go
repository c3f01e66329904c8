package handlers

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mcpfn/mcpfn/ddbcrc"
)

// TableEnv names the environment variable holding the broadcasts table's
// name; each tool declares it with its table access, and the generated
// template sets it on every tool function.
const TableEnv = "BROADCASTS_TABLE"

// StoreFromEnv returns a store over the table named by BROADCASTS_TABLE,
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
