package taskstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// Create writes a new working task for in.Owner and returns it. The write
// is conditional on the id being new, and durable before Create returns, so
// a tasks/get that follows the CreateTaskResult always finds the task.
// Params larger than Options.MaxPayloadBytes → [ErrTooLarge], nothing
// written. A sealed store ([Store.Sealed]) seals the record.
func (s *Store) Create(ctx context.Context, in NewTask) (*Task, error) {
	if len(in.Params) > s.opts.MaxPayloadBytes {
		return nil, fmt.Errorf("%w: params of %d bytes exceed the %s limit", ErrTooLarge, len(in.Params), s.limit())
	}
	id := in.ID
	if id == "" {
		id = NewID(in.Tool)
	}
	if tool, ok := ToolOf(id); !ok || tool != in.Tool {
		return nil, errors.New("taskstore: a task needs its tool's name, and an id of that tool (NewID)")
	}
	ttl, poll := in.TTL, in.PollInterval
	if ttl <= 0 {
		ttl = s.opts.TTL
	}
	if poll <= 0 {
		poll = s.opts.PollInterval
	}
	now := s.now()
	it := item{
		TaskID:         id,
		Owner:          in.Owner,
		Tool:           in.Tool,
		Function:       in.Function,
		CallID:         in.CallID,
		Status:         string(StatusWorking),
		CreatedAt:      now.UnixMilli(),
		LastUpdatedAt:  now.UnixMilli(),
		TTLMs:          ttl.Milliseconds(),
		ExpiresAt:      expirySeconds(now.Add(ttl)),
		PollIntervalMs: poll.Milliseconds(),
		Params:         string(in.Params),
		Version:        1,
	}
	if s.sealer != nil {
		it.Seal = s.sealer.Seal(it.fixed())
	}
	av, err := attributevalue.MarshalMap(it)
	if err != nil {
		return nil, fmt.Errorf("taskstore: encoding task: %w", err)
	}
	if _, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                aws.String(s.table),
		Item:                     av,
		ConditionExpression:      aws.String("attribute_not_exists(#taskId)"),
		ExpressionAttributeNames: map[string]string{"#taskId": attrID},
	}); err != nil {
		return nil, fmt.Errorf("taskstore: creating task: %w", err)
	}
	return it.task()
}

// limit names Options.MaxPayloadBytes for error messages, with the
// DynamoDB item limit it protects.
func (s *Store) limit() string {
	return fmt.Sprintf("%d KB (%d bytes; a DynamoDB item holds at most 400 KB)", s.opts.MaxPayloadBytes/1024, s.opts.MaxPayloadBytes)
}
