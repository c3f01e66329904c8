package taskstore

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Slots bound long work (decision 0033): a task runs only once the gateway
// has admitted it into a slot of its owner and a slot of the gateway's
// total. A slot table is one item — "gateway#slots#all", or
// "gateway#slots#owner#<SHA-256 of the owner>" — whose map "held" names
// each admitted task with the time it was admitted; a conditional write
// adds a task only while the map holds fewer than the limit. No tool role
// may write these keys (template.yaml confines tool roles to "<tool>.*").
//
// A slot is free, whoever looks, once
//   - its task is no longer working (completed, failed, cancelled,
//     input_required: a tasks/update that resumes it is admitted again), or
//     is gone or expired, or was never written (admitted over a minute ago,
//     yet no record: the gateway died between admitting and creating);
//   - or, at the latest, Limits.Hold after admission — the run window plus
//     Lambda's longest run: no run of the task can still be going.
// Nobody has to poll for that: an admission that finds the limit reached
// reads the held tasks' status (BatchGetItem) and removes the free slots
// before it decides. The gateway also releases a slot at once when it
// cancels or fails a task itself.

// Limits are the caps [Store.Admit] enforces; a zero cap is no cap.
type Limits struct {
	// PerOwner caps the working tasks of one owner; Total those of all.
	PerOwner, Total int
	// Hold is the longest a slot is held: the task's run window plus
	// Lambda's longest run.
	Hold time.Duration
}

// The names [LimitError] gives the limits.
const (
	LimitPerOwner = "tasks per caller"
	LimitTotal    = "tasks in total"
)

// ErrLimit: a limit of working tasks is reached; errors.As gives the
// *LimitError saying which.
var ErrLimit = errors.New("taskstore: a limit of working tasks is reached")

// LimitError is a task refused by a limit.
type LimitError struct {
	// Limit is LimitPerOwner or LimitTotal; Max its value.
	Limit string
	Max   int
	// RetryAfter is when the earliest held slot frees at the latest
	// (its Hold ends); one frees sooner when its task ends.
	RetryAfter time.Duration
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("taskstore: %d working %s, the limit", e.Max, e.Limit)
}

func (e *LimitError) Unwrap() error { return ErrLimit }

// admitGrace is how long a slot whose task has no record yet still counts:
// the gateway admits a task, then writes it.
const admitGrace = time.Minute

// slotAttempts bounds the conditional-write rounds of one admission.
const slotAttempts = 6

const (
	slotsAll   = "gateway#slots#all"
	slotsOwner = "gateway#slots#owner#"
	attrHeld   = "held"
)

func ownerSlots(owner string) string {
	h := sha256.Sum256([]byte(owner))
	return slotsOwner + base64.RawURLEncoding.EncodeToString(h[:])
}

// Admit takes a slot for task id of owner: first of the owner, then of the
// total (a refused total gives the owner's back). The narrower limit goes
// first, so one owner's burst never holds more than its own limit of the
// total's slots, even for the moment before its refusals give them back. A
// task admitted before (a resume) keeps its slots, admitted afresh. A
// reached limit is a *LimitError.
func (s *Store) Admit(ctx context.Context, owner, id string, lim Limits) error {
	if !validID(id) {
		return fmt.Errorf("taskstore: %q is not a task id", id)
	}
	at := s.now()
	mine := ownerSlots(owner)
	if err := s.take(ctx, mine, id, at, lim.PerOwner, LimitPerOwner, lim.Hold); err != nil {
		return err
	}
	if err := s.take(ctx, slotsAll, id, at, lim.Total, LimitTotal, lim.Hold); err != nil {
		_ = s.free(context.WithoutCancel(ctx), mine, id, at)
		return err
	}
	return nil
}

// Release frees task id's slots (the gateway cancelled or failed it).
// Freeing a slot that is not held changes nothing.
func (s *Store) Release(ctx context.Context, owner, id string) error {
	return errors.Join(s.free(ctx, ownerSlots(owner), id, time.Time{}), s.free(ctx, slotsAll, id, time.Time{}))
}

// take adds id to the slot item, admitted at, if the item holds fewer
// than max live slots.
func (s *Store) take(ctx context.Context, item, id string, at time.Time, max int, limit string, hold time.Duration) error {
	if max <= 0 {
		return nil
	}
	names := map[string]string{"#held": attrHeld, "#id": id, "#expiresAt": TTLAttribute}
	atMs := num(at.UnixMilli())
	// The item outlives its latest slot; DynamoDB's TTL then deletes it.
	exp := num(expirySeconds(at.Add(2 * hold)))
	for range slotAttempts {
		_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                           aws.String(s.table),
			Key:                                 key(item),
			UpdateExpression:                    aws.String("SET #held.#id = :at, #expiresAt = :exp"),
			ConditionExpression:                 aws.String("attribute_exists(#held) AND (size(#held) < :max OR attribute_exists(#held.#id))"),
			ExpressionAttributeNames:            names,
			ExpressionAttributeValues:           map[string]types.AttributeValue{":at": atMs, ":exp": exp, ":max": num(int64(max))},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		var ccf *types.ConditionalCheckFailedException
		switch {
		case err == nil:
			return nil
		case !errors.As(err, &ccf):
			return fmt.Errorf("taskstore: taking a slot: %w", err)
		}
		held, ok := heldOf(ccf.Item)
		if !ok {
			// No slot item yet: the first admission writes it.
			_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{
				TableName: aws.String(s.table),
				Item: map[string]types.AttributeValue{
					attrID:       str(item),
					attrHeld:     &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{id: atMs}},
					TTLAttribute: exp,
				},
				ConditionExpression:      aws.String("attribute_not_exists(#k)"),
				ExpressionAttributeNames: map[string]string{"#k": attrID},
			})
			if err == nil {
				return nil
			}
			if !errors.As(err, &ccf) {
				return fmt.Errorf("taskstore: taking a slot: %w", err)
			}
			continue // another admission wrote it first
		}
		free, err := s.freeSlots(ctx, held, max, hold)
		if err != nil {
			return err
		}
		if len(free) == 0 {
			return &LimitError{Limit: limit, Max: max, RetryAfter: retryAfter(held, hold, s.now())}
		}
		if err := s.remove(ctx, item, free); err != nil {
			return err
		}
	}
	return fmt.Errorf("taskstore: taking a slot: %d conflicting admissions in a row", slotAttempts)
}

// heldOf reads an item's held map: task id → admitted at (ms).
func heldOf(item map[string]types.AttributeValue) (map[string]int64, bool) {
	m, ok := item[attrHeld].(*types.AttributeValueMemberM)
	if !ok {
		return nil, false
	}
	held := make(map[string]int64, len(m.Value))
	for id, v := range m.Value {
		n, _ := v.(*types.AttributeValueMemberN)
		if n == nil {
			held[id] = 0 // not ours: free
			continue
		}
		ms, _ := strconv.ParseInt(n.Value, 10, 64)
		held[id] = ms
	}
	return held, true
}

// freeSlots returns the held slots that are free (as admitted: id → at):
// past their hold, or — when the live ones reach max — whose task is no
// longer working, gone, or never written.
func (s *Store) freeSlots(ctx context.Context, held map[string]int64, max int, hold time.Duration) (map[string]int64, error) {
	now := s.now().UnixMilli()
	free := map[string]int64{}
	var live []string
	for id, at := range held {
		if at+hold.Milliseconds() <= now || !validID(id) {
			free[id] = at
		} else {
			live = append(live, id)
		}
	}
	if len(live) < max {
		return free, nil
	}
	states, err := s.states(ctx, live)
	if err != nil {
		return nil, err
	}
	for _, id := range live {
		at := held[id]
		st, seen := states[id]
		settled := at+admitGrace.Milliseconds() <= now
		switch {
		case !seen && settled:
			free[id] = at // admitted, never written
		case seen && !st.working && (st.updatedAt >= at || settled):
			// Ended (or waiting for input) since it was admitted. A task
			// whose state predates its admission is about to be resumed
			// (tasks/update admits, then moves it to working).
			free[id] = at
		}
	}
	return free, nil
}

// taskState is what an admission reads of a held task.
type taskState struct {
	working   bool  // working and alive
	updatedAt int64 // lastUpdatedAt, ms
}

// states reads held tasks: id → its state. An id absent from the answer
// has no record; one DynamoDB did not read counts as working.
func (s *Store) states(ctx context.Context, ids []string) (map[string]taskState, error) {
	out := map[string]taskState{}
	for len(ids) > 0 {
		n := min(len(ids), 100) // BatchGetItem's limit
		keys := make([]map[string]types.AttributeValue, n)
		for i, id := range ids[:n] {
			keys[i] = key(id)
		}
		ids = ids[n:]
		res, err := s.client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
			s.table: {Keys: keys, ConsistentRead: aws.Bool(true), ProjectionExpression: aws.String("#k, #status, #expiresAt, #lastUpdatedAt"),
				ExpressionAttributeNames: map[string]string{"#k": attrID, "#status": "status", "#expiresAt": TTLAttribute, "#lastUpdatedAt": "lastUpdatedAt"}},
		}})
		if err != nil {
			return nil, fmt.Errorf("taskstore: reading held tasks: %w", err)
		}
		for _, k := range res.UnprocessedKeys[s.table].Keys {
			if v, ok := k[attrID].(*types.AttributeValueMemberS); ok {
				out[v.Value] = taskState{working: true}
			}
		}
		for _, av := range res.Responses[s.table] {
			it, err := decodeItem(av)
			if err != nil {
				return nil, err
			}
			out[it.TaskID] = taskState{working: it.Status == string(StatusWorking) && !expired(it.ExpiresAt, s.now()), updatedAt: it.LastUpdatedAt}
		}
	}
	return out, nil
}

// remove deletes free slots from item, each only while it is the
// admission that was found free.
func (s *Store) remove(ctx context.Context, item string, free map[string]int64) error {
	names := map[string]string{"#held": attrHeld}
	values := map[string]types.AttributeValue{}
	var paths, conds []string
	i := 0
	for id, at := range free {
		n, v := "#s"+strconv.Itoa(i), ":s"+strconv.Itoa(i)
		names[n], values[v] = id, num(at)
		paths = append(paths, "#held."+n)
		conds = append(conds, "#held."+n+" = "+v)
		i++
	}
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(item),
		UpdateExpression:          aws.String("REMOVE " + strings.Join(paths, ", ")),
		ConditionExpression:       aws.String(strings.Join(conds, " AND ")),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	})
	var ccf *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &ccf) {
		return fmt.Errorf("taskstore: freeing slots: %w", err)
	}
	return nil // a lost condition: another admission changed them; look again
}

// free removes id's slot from item: only the admission of at, or
// whichever there is when at is zero.
func (s *Store) free(ctx context.Context, item, id string, at time.Time) error {
	names := map[string]string{"#held": attrHeld, "#id": id}
	cond := "attribute_exists(#held.#id)"
	var values map[string]types.AttributeValue
	if !at.IsZero() {
		cond = "#held.#id = :at"
		values = map[string]types.AttributeValue{":at": num(at.UnixMilli())}
	}
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(item),
		UpdateExpression:          aws.String("REMOVE #held.#id"),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	})
	var ccf *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &ccf) {
		return fmt.Errorf("taskstore: freeing a slot: %w", err)
	}
	return nil
}

// retryAfter is when the earliest of held frees at the latest.
func retryAfter(held map[string]int64, hold time.Duration, now time.Time) time.Duration {
	first := int64(0)
	for _, at := range held {
		if first == 0 || at < first {
			first = at
		}
	}
	if d := time.UnixMilli(first).Add(hold).Sub(now); d > 0 {
		return d.Round(time.Second)
	}
	return time.Second
}
