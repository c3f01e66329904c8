package taskstore

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// Watch polls task id every interval with a consistent read and closes the
// returned channel once the task is cancelled (or gone: expired or
// deleted). It stops polling, without closing, when ctx ends: run it only
// while a handler runs, with the handler's context. Read errors are
// retried at the next tick. Each poll is one strongly consistent read,
// billed on the whole item (1 read unit per 4 KB), projection or not.
func (s *Store) Watch(ctx context.Context, id string, interval time.Duration) <-chan struct{} {
	return s.poll(ctx, interval, func(ctx context.Context) bool {
		if !validID(id) {
			return true // no such task: gone
		}
		out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
			TableName:                aws.String(s.table),
			Key:                      key(id),
			ConsistentRead:           aws.Bool(true),
			ProjectionExpression:     aws.String("#status, #expiresAt"),
			ExpressionAttributeNames: attributeNames("#status", "#expiresAt"),
		})
		if err != nil {
			return false
		}
		if len(out.Item) == 0 {
			return true
		}
		it, err := decodeItem(out.Item)
		if err != nil {
			return false
		}
		return it.Status == string(StatusCancelled) || expired(it.ExpiresAt, s.now())
	})
}

// poll calls stop every interval, the first time after one interval, until
// it reports true (then the returned channel is closed) or ctx ends.
func (s *Store) poll(ctx context.Context, interval time.Duration, stop func(context.Context) bool) <-chan struct{} {
	if interval <= 0 {
		interval = DefaultPollInterval
	}
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			stopped := stop(ctx)
			if s.afterPoll != nil {
				s.afterPoll()
			}
			if ctx.Err() != nil {
				return // the handler ended first: nothing to cancel
			}
			if stopped {
				close(done)
				return
			}
		}
	}()
	return done
}
