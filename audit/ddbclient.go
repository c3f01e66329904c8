package audit

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mcpfn/mcpfn/ddbcrc"
)

// NewDynamoClient returns the DynamoDB client [NewFromEnv] and the CLI use:
// dynamodb.NewFromConfig with response CRC32 checks only where the response
// carries a checksum (see internal/ddbcrc: DynamoDB Local sends none on
// error responses, and every lost conditional write made the SDK warn).
func NewDynamoClient(cfg aws.Config, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	return dynamodb.NewFromConfig(cfg, append([]func(*dynamodb.Options){ddbcrc.Option}, optFns...)...)
}
