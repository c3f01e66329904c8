package taskstore

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// Get returns owner's task id, read consistently. An unknown id, an expired
// task and another owner's task are all [ErrNotFound]; on a sealed store,
// a record of owner's that does not verify is [ErrTampered].
func (s *Store) Get(ctx context.Context, owner, id string) (*Task, error) {
	it, err := s.read(ctx, id)
	if err != nil {
		return nil, err
	}
	return s.open(it, owner)
}

// open is owner's task it, once it verifies: another owner's record is not
// found, whatever its seal says.
func (s *Store) open(it *item, owner string) (*Task, error) {
	if it.Owner != owner {
		return nil, ErrNotFound
	}
	if !s.verified(it) {
		return nil, ErrTampered
	}
	return it.task()
}

// read returns the live task id, whoever owns it: ErrNotFound when absent,
// expired or not a task (a cancel marker).
func (s *Store) read(ctx context.Context, id string) (*item, error) {
	if !validID(id) {
		return nil, ErrNotFound
	}
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            key(id),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("taskstore: reading task: %w", err)
	}
	if len(out.Item) == 0 {
		return nil, ErrNotFound
	}
	it, err := decodeItem(out.Item)
	if err != nil {
		return nil, err
	}
	if it.Status == "" || expired(it.ExpiresAt, s.now()) {
		return nil, ErrNotFound
	}
	return it, nil
}
