package dynamolocal

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// CreateTable creates a table and returns once it and all its global
// secondary indexes are ACTIVE. DynamoDB Local usually reports ACTIVE at
// once, but an external endpoint (MCPFN_DYNAMODB_ENDPOINT) may be a real
// table service, and the SDK's TableExists waiter neither looks at index
// status nor polls faster than every 20 s.
func (s *Server) CreateTable(ctx context.Context, in *dynamodb.CreateTableInput) error {
	client := s.Client(ctx)
	if _, err := client.CreateTable(ctx, in); err != nil {
		return fmt.Errorf("dynamolocal: creating table %s: %w", aws.ToString(in.TableName), err)
	}
	delay := 20 * time.Millisecond
	for {
		out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: in.TableName})
		if err != nil {
			return fmt.Errorf("dynamolocal: describing table %s: %w", aws.ToString(in.TableName), err)
		}
		if tableActive(out.Table) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("dynamolocal: table %s not ACTIVE: %w", aws.ToString(in.TableName), ctx.Err())
		case <-time.After(delay):
		}
		delay = min(2*delay, time.Second)
	}
}

func tableActive(t *types.TableDescription) bool {
	if t == nil || t.TableStatus != types.TableStatusActive {
		return false
	}
	for _, g := range t.GlobalSecondaryIndexes {
		if g.IndexStatus != types.IndexStatusActive {
			return false
		}
	}
	return true
}
