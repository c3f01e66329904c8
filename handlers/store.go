package handlers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ChannelIndex is the global secondary index (channel, createdAt) that
// broadcast_list queries. template.yaml defines it on BroadcastsTable.
const ChannelIndex = "byChannel"

// createdAtLayout is RFC 3339 in UTC with a fixed nine-digit fraction. The
// fixed width matters: createdAt is the index's sort key, compared as a
// string, and time.RFC3339Nano drops trailing zeros, which would sort
// "…05.1Z" after "…05.12Z".
const createdAtLayout = "2006-01-02T15:04:05.000000000Z"

// Broadcast is one message posted to a channel.
type Broadcast struct {
	ID        string `json:"id" dynamodbav:"id" jsonschema:"the broadcast's id"`
	Channel   string `json:"channel" dynamodbav:"channel" jsonschema:"the channel it was posted to"`
	Text      string `json:"text" dynamodbav:"text" jsonschema:"the message"`
	CreatedAt string `json:"createdAt" dynamodbav:"createdAt" jsonschema:"when it was posted (RFC 3339, UTC)"`
	// Attachment is the file attached with broadcast_attach, if any.
	Attachment *Attachment `json:"attachment,omitempty" dynamodbav:"attachment,omitempty" jsonschema:"the file attached to it, if any (read it with broadcast_attachment)"`
}

// DynamoAPI is the part of the DynamoDB client the store uses;
// *dynamodb.Client implements it.
type DynamoAPI interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

// Store keeps broadcasts in one DynamoDB table: partition key id (S), and
// the ChannelIndex GSI for listing; and, when built [Store.WithAttachments],
// their attachments' bytes in an S3 bucket. It is safe for concurrent use.
type Store struct {
	db    DynamoAPI
	table string
	now   func() time.Time

	objects ObjectAPI // nil: no attachments bucket
	bucket  string
}

// NewStore returns a store over the table named table, without an
// attachments bucket.
func NewStore(db DynamoAPI, table string) *Store {
	return &Store{db: db, table: table, now: time.Now}
}

// WithAttachments returns a copy of the store that keeps attachments in
// the bucket named bucket (template.yaml's AttachmentsBucket: versioned, see
// [AttachmentPrefix]).
func (s *Store) WithAttachments(objects ObjectAPI, bucket string) *Store {
	c := *s
	c.objects, c.bucket = objects, bucket
	return &c
}

// Table returns the name of the store's table.
func (s *Store) Table() string { return s.table }

// Bucket returns the name of the store's attachments bucket ("" without one).
func (s *Store) Bucket() string { return s.bucket }

// Errors the store returns; handlers turn them into tool errors.
var (
	ErrNotFound  = errors.New("handlers: broadcast not found")
	ErrExists    = errors.New("handlers: a broadcast with this id exists")
	ErrBadCursor = errors.New("handlers: invalid cursor")
	// ErrNoAttachment: the broadcast exists and has no attachment.
	ErrNoAttachment = errors.New("handlers: the broadcast has no attachment")
)

// ExistsError is returned by Put when the id is taken. Existing is the item
// that holds it, when DynamoDB returned it.
type ExistsError struct{ Existing *Broadcast }

func (e *ExistsError) Error() string { return ErrExists.Error() }

// Is makes errors.Is(err, ErrExists) hold.
func (e *ExistsError) Is(target error) bool { return target == ErrExists }

// stamp returns the creation time in the index's sort-key format.
func (s *Store) stamp() string { return s.now().UTC().Format(createdAtLayout) }

// Put writes b unless its id is taken (a conditional put: never overwrite
// another broadcast). On a taken id it returns an *ExistsError carrying the
// existing item, so a retried create can tell its own earlier write from a
// collision without a second read.
func (s *Store) Put(ctx context.Context, b Broadcast) error {
	item, err := attributevalue.MarshalMap(b)
	if err != nil {
		return fmt.Errorf("handlers: encoding broadcast: %w", err)
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           aws.String(s.table),
		Item:                                item,
		ConditionExpression:                 aws.String("attribute_not_exists(id)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		ee := &ExistsError{}
		if len(ccf.Item) > 0 {
			var prev Broadcast
			if attributevalue.UnmarshalMap(ccf.Item, &prev) == nil {
				ee.Existing = &prev
			}
		}
		return ee
	}
	if err != nil {
		return fmt.Errorf("handlers: putting broadcast: %w", err)
	}
	return nil
}

// Get returns the broadcast with id, or ErrNotFound. The read is strongly
// consistent, so a broadcast is visible to get as soon as create returned.
func (s *Store) Get(ctx context.Context, id string) (Broadcast, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            idKey(id),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Broadcast{}, fmt.Errorf("handlers: getting broadcast: %w", err)
	}
	if len(out.Item) == 0 {
		return Broadcast{}, ErrNotFound
	}
	var b Broadcast
	if err := attributevalue.UnmarshalMap(out.Item, &b); err != nil {
		return Broadcast{}, fmt.Errorf("handlers: decoding broadcast: %w", err)
	}
	return b, nil
}

// Delete removes the broadcast with id and returns it, or ErrNotFound. The
// delete is conditional on the item existing, so "not found" is decided by
// the same request that deletes, not by a read that a concurrent delete
// could overtake.
func (s *Store) Delete(ctx context.Context, id string) (Broadcast, error) {
	out, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:           aws.String(s.table),
		Key:                 idKey(id),
		ConditionExpression: aws.String("attribute_exists(id)"),
		ReturnValues:        types.ReturnValueAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return Broadcast{}, ErrNotFound
	}
	if err != nil {
		return Broadcast{}, fmt.Errorf("handlers: deleting broadcast: %w", err)
	}
	var b Broadcast
	if err := attributevalue.UnmarshalMap(out.Attributes, &b); err != nil {
		return Broadcast{}, fmt.Errorf("handlers: decoding deleted broadcast: %w", err)
	}
	return b, nil
}

// SetAttachment records a as the attachment of the broadcast with id and
// returns the attachment it replaced (nil when it had none), or ErrNotFound.
// Read and written by the one request, so of two attachments set at once
// each learns exactly the one it replaced.
func (s *Store) SetAttachment(ctx context.Context, id string, a Attachment) (replaced *Attachment, err error) {
	av, err := attributevalue.Marshal(a)
	if err != nil {
		return nil, fmt.Errorf("handlers: encoding attachment: %w", err)
	}
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       idKey(id),
		UpdateExpression:          aws.String("SET #a = :a"),
		ConditionExpression:       aws.String("attribute_exists(id)"),
		ExpressionAttributeNames:  map[string]string{"#a": attachmentAttribute},
		ExpressionAttributeValues: map[string]types.AttributeValue{":a": av},
		ReturnValues:              types.ReturnValueUpdatedOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("handlers: setting attachment: %w", err)
	}
	old, ok := out.Attributes[attachmentAttribute]
	if !ok {
		return nil, nil
	}
	var prev Attachment
	if err := attributevalue.Unmarshal(old, &prev); err != nil {
		return nil, fmt.Errorf("handlers: decoding replaced attachment: %w", err)
	}
	return &prev, nil
}

// attachmentAttribute is the item attribute holding a broadcast's
// attachment (Broadcast.Attachment's dynamodbav name).
const attachmentAttribute = "attachment"

// Count returns how many broadcasts channel holds, counted on the index
// (as eventually consistent as [Store.List]) without reading them.
func (s *Store) Count(ctx context.Context, channel string) (int, error) {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		IndexName:                 aws.String(ChannelIndex),
		KeyConditionExpression:    aws.String("channel = :channel"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":channel": &types.AttributeValueMemberS{Value: channel}},
		Select:                    types.SelectCount,
	}
	n := 0
	for {
		out, err := s.db.Query(ctx, in)
		if err != nil {
			return 0, fmt.Errorf("handlers: counting broadcasts: %w", err)
		}
		n += int(out.Count)
		if len(out.LastEvaluatedKey) == 0 {
			return n, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// Page is one page of a channel's broadcasts, newest first.
type Page struct {
	Items []Broadcast
	// NextCursor continues after the last item; "" on the last page.
	NextCursor string
}

// List returns up to limit broadcasts of channel, newest first, starting
// after cursor ("" for the first page). A cursor that is not one List
// returned for the same channel is ErrBadCursor.
//
// The index is eventually consistent (DynamoDB offers no consistent reads
// on a GSI), so a broadcast created a moment ago may be missing from a list
// while Get, a consistent read on the table, already returns it.
//
// It asks DynamoDB for one item more than limit: when that item comes back
// there is a next page and the cursor is the key of the last item kept;
// when it does not, this is the last page and there is no cursor. Handing out
// DynamoDB's LastEvaluatedKey as is would end every full page with a cursor
// to an empty one.
func (s *Store) List(ctx context.Context, channel string, limit int, cursor string) (Page, error) {
	if limit < 1 {
		return Page{}, fmt.Errorf("handlers: list limit %d < 1", limit)
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		IndexName:                 aws.String(ChannelIndex),
		KeyConditionExpression:    aws.String("channel = :channel"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":channel": &types.AttributeValueMemberS{Value: channel}},
		ScanIndexForward:          aws.Bool(false),
		Limit:                     aws.Int32(int32(limit + 1)),
	}
	if cursor != "" {
		c, err := decodeCursor(cursor, channel)
		if err != nil {
			return Page{}, err
		}
		in.ExclusiveStartKey = c.key()
	}
	out, err := s.db.Query(ctx, in)
	if err != nil {
		return Page{}, fmt.Errorf("handlers: listing broadcasts: %w", err)
	}
	items := make([]Broadcast, 0, len(out.Items))
	if err := attributevalue.UnmarshalListOfMaps(out.Items, &items); err != nil {
		return Page{}, fmt.Errorf("handlers: decoding broadcasts: %w", err)
	}
	page := Page{Items: items}
	switch {
	case len(items) > limit:
		page.Items = items[:limit]
		last := page.Items[limit-1]
		page.NextCursor = encodeCursor(cursorKey{Channel: last.Channel, CreatedAt: last.CreatedAt, ID: last.ID})
	case len(out.LastEvaluatedKey) > 0:
		// Fewer items than asked for, yet DynamoDB stopped early: the 1 MB
		// page limit. Continue where it stopped.
		c, err := cursorFromKey(out.LastEvaluatedKey)
		if err != nil {
			return Page{}, err
		}
		page.NextCursor = encodeCursor(c)
	}
	return page, nil
}

func idKey(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}}
}
