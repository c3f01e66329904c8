package taskstore

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// markerPrefix starts every cancel marker key; task ids (base64url) never
// contain '#'.
const markerPrefix = "cancel#"

// markerKey hides owner and requestKey behind a hash, so the key reveals
// neither and another owner's request with the same key has another marker.
func markerKey(owner, requestKey string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%d:%s|%s", len(owner), owner, requestKey)
	return markerPrefix + base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// MarkCancelled records that owner cancelled the synchronous call
// requestKey (notifications/cancelled; the gateway chooses the key, e.g.
// the JSON-RPC id). The marker lives Options.MarkerTTL; a second mark moves
// its time forward. Markers share the table with tasks under keys no task
// id can take ("cancel#…"), which tool functions may read and only the
// gateway may write (template.yaml).
func (s *Store) MarkCancelled(ctx context.Context, owner, requestKey string) error {
	now := s.now()
	av, err := attributevalue.MarshalMap(item{
		TaskID:    markerKey(owner, requestKey),
		MarkedAt:  now.UnixMilli(),
		ExpiresAt: expirySeconds(now.Add(s.opts.MarkerTTL)),
	})
	if err != nil {
		return fmt.Errorf("taskstore: encoding cancel marker: %w", err)
	}
	if _, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: av}); err != nil {
		return fmt.Errorf("taskstore: writing cancel marker: %w", err)
	}
	return nil
}

// CancelledSince reports whether owner marked requestKey cancelled at or
// after t — t being when the call started, so a marker left by an earlier
// call that reused the key does not cancel this one. The marker's time is
// the gateway's clock and t the function's: pass t a little early if the
// clocks may differ.
func (s *Store) CancelledSince(ctx context.Context, owner, requestKey string, t time.Time) (bool, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            key(markerKey(owner, requestKey)),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return false, fmt.Errorf("taskstore: reading cancel marker: %w", err)
	}
	if len(out.Item) == 0 {
		return false, nil
	}
	it, err := decodeItem(out.Item)
	if err != nil {
		return false, err
	}
	now := s.now()
	return !expired(it.ExpiresAt, now) && it.MarkedAt >= t.UnixMilli() && it.MarkedAt <= now.Add(markerAhead).UnixMilli(), nil
}

// markerAhead is how far in the future a marker may be dated and still
// count: the gateway's clock may run a little ahead of the function's. A
// marker dated later was not written by a gateway for a call of now (only
// the gateway's role may write markers; decision 0033): it cancels nothing,
// so no one can plant a marker that waits for calls yet to come.
const markerAhead = time.Minute

// WatchCall polls [Store.CancelledSince] every interval (the first poll
// after one interval, so a short call costs no read) and closes the
// returned channel once the call is marked cancelled. It stops polling,
// without closing, when ctx ends.
func (s *Store) WatchCall(ctx context.Context, owner, requestKey string, since time.Time, interval time.Duration) <-chan struct{} {
	return s.poll(ctx, interval, func(ctx context.Context) bool {
		ok, err := s.CancelledSince(ctx, owner, requestKey, since)
		return err == nil && ok
	})
}
