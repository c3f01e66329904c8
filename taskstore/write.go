package taskstore

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// update is one conditional UpdateItem. Its expressions refer to every
// attribute as #name (several, like status and owner, are DynamoDB
// reserved words); apply maps each #name to name.
type update struct {
	id     string
	expr   string
	cond   string
	values map[string]types.AttributeValue
}

// errCondition is a lost conditional write; old is the item as it was
// (nil when there was none).
type errCondition struct{ old *item }

func (e *errCondition) Error() string { return "taskstore: conditional write lost" }

// apply runs u and returns the item after it. On a failed condition it
// returns an *errCondition carrying the item as DynamoDB saw it, which the
// caller classifies (see whyNotWorking).
func (s *Store) apply(ctx context.Context, u update) (*item, error) {
	if !validID(u.id) {
		return nil, &errCondition{} // as if there were no such item
	}
	names := attributeNames(u.expr, u.cond)
	out, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.table),
		Key:                                 key(u.id),
		UpdateExpression:                    aws.String(u.expr),
		ConditionExpression:                 aws.String(u.cond),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           usedValues(u.values, u.expr, u.cond),
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err != nil {
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			lost := &errCondition{}
			if len(ccf.Item) > 0 {
				if lost.old, err = decodeItem(ccf.Item); err != nil {
					return nil, err
				}
			}
			return nil, lost
		}
		return nil, fmt.Errorf("taskstore: updating task %s: %w", u.id, err)
	}
	return decodeItem(out.Attributes)
}

// Expression parts the state transitions share.
const (
	// heldByRun: the task is working, held by :run, and alive.
	heldByRun = "#status = :working AND #runId = :run AND #expiresAt > :now"
	// touched: a visible change of the task.
	touched = "#lastUpdatedAt = :nowMs, #version = #version + :one"
)

// applyWhileWorking runs u, which requires a working task, with the clock,
// :working and :run (runID) among its values, and turns a refusal into
// the error the API documents.
func (s *Store) applyWhileWorking(ctx context.Context, u update, runID string) (*item, error) {
	now := s.now()
	u.values[":working"] = str(string(StatusWorking))
	u.values[":run"] = str(runID)
	u.values = stamp(now, u.values)
	it, err := s.apply(ctx, u)
	if err != nil {
		return nil, whyNotWorking(err, now)
	}
	return it, nil
}

// whyNotWorking turns a lost write that required "working, held by runID"
// into the error the API documents.
func whyNotWorking(err error, now time.Time) error {
	var lost *errCondition
	if !errors.As(err, &lost) {
		return err
	}
	old := lost.old
	if old == nil || old.Status == "" || expired(old.ExpiresAt, now) {
		return ErrNotFound
	}
	switch Status(old.Status) {
	case StatusCancelled:
		return ErrCancelled
	case StatusWorking:
		return ErrClaimed
	}
	return ErrNotWorking
}

func key(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrID: &types.AttributeValueMemberS{Value: id}}
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

// stamp adds the values every write uses: the clock (:now in seconds for
// the expiry condition, :nowMs for lastUpdatedAt) and :one.
func stamp(now time.Time, values map[string]types.AttributeValue) map[string]types.AttributeValue {
	values[":now"] = num(now.Unix())
	values[":nowMs"] = num(now.UnixMilli())
	values[":one"] = num(1)
	return values
}

var attributeName = regexp.MustCompile(`#[A-Za-z]+`)

// attributeNames maps each #name the expressions use to name; DynamoDB
// refuses names an expression does not use.
func attributeNames(exprs ...string) map[string]string {
	names := map[string]string{}
	for _, e := range exprs {
		for _, n := range attributeName.FindAllString(e, -1) {
			names[n] = n[1:]
		}
	}
	return names
}

var valueName = regexp.MustCompile(`:[A-Za-z]+`)

// usedValues keeps the values the expressions use; DynamoDB refuses the
// others, and stamp adds the clock whether a write needs it or not.
func usedValues(values map[string]types.AttributeValue, exprs ...string) map[string]types.AttributeValue {
	used := map[string]types.AttributeValue{}
	for _, e := range exprs {
		for _, n := range valueName.FindAllString(e, -1) {
			if v, ok := values[n]; ok {
				used[n] = v
			}
		}
	}
	return used
}
