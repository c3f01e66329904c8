package audit

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ScanAPI is what [Auditor.RecentRows] needs besides [DynamoAPI]: the table
// has no index over every row, so listing all calls is a Scan.
type ScanAPI interface {
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

// ErrNoScan is returned by [Auditor.RecentRows] when the auditor's client
// cannot Scan.
var ErrNoScan = errors.New("audit: the client cannot Scan the table")

// MaxScanned bounds how many items one [Auditor.RecentRows] reads, whatever
// the time window: a viewer's page must not read a production table whole.
const MaxScanned = 20000

// RecentRows returns the rows started within opts.Since..opts.Until (either
// may be zero), newest first, at most opts.Limit of them (0: all). The table
// has indexes by trace, caller and entity only, so this is a Scan with a time
// filter, which reads (and pays for) every row of the table: meant for a
// local or debugging viewer, not for a hot path. It stops after
// [MaxScanned] items and then reports truncated.
func (a *Auditor) RecentRows(ctx context.Context, opts QueryOptions) (rows []Row, truncated bool, err error) {
	sc, ok := a.cfg.Client.(ScanAPI)
	if !ok {
		return nil, false, ErrNoScan
	}
	in := &dynamodb.ScanInput{TableName: aws.String(a.cfg.Table)}
	var conds []string
	values := map[string]types.AttributeValue{}
	if !opts.Since.IsZero() {
		conds = append(conds, "#t >= :since")
		values[":since"] = &types.AttributeValueMemberS{Value: opts.Since.UTC().Format(StartedAtLayout)}
	}
	if !opts.Until.IsZero() {
		conds = append(conds, "#t <= :until")
		values[":until"] = &types.AttributeValueMemberS{Value: opts.Until.UTC().Format(StartedAtLayout)}
	}
	if len(conds) > 0 {
		expr := conds[0]
		if len(conds) == 2 {
			expr += " AND " + conds[1]
		}
		in.FilterExpression = aws.String(expr)
		in.ExpressionAttributeNames = map[string]string{"#t": "startedAt"}
		in.ExpressionAttributeValues = values
	}
	scanned := 0
	for {
		out, err := sc.Scan(ctx, in)
		if err != nil {
			return rows, truncated, fmt.Errorf("audit: scan: %w", err)
		}
		scanned += int(out.ScannedCount)
		for _, item := range out.Items {
			r, err := rowFromItem(item)
			if err != nil {
				return rows, truncated, fmt.Errorf("audit: decode row: %w", err)
			}
			rows = append(rows, r)
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		if scanned >= MaxScanned {
			truncated = true
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	SortNewestFirst(rows)
	if opts.Limit > 0 && len(rows) > opts.Limit {
		rows, truncated = rows[:opts.Limit], true
	}
	return rows, truncated, nil
}

// SortNewestFirst orders rows by startedAt, newest first (ties by call id).
func SortNewestFirst(rows []Row) {
	sort.SliceStable(rows, func(i, j int) bool {
		if !rows[i].StartedAt.Equal(rows[j].StartedAt) {
			return rows[i].StartedAt.After(rows[j].StartedAt)
		}
		return rows[i].CallID < rows[j].CallID
	})
}

// CallRow returns writer's row of call callID (found false: there is none).
// The key is the table's, "<writer>#<callId>" ([RowKey]).
func (a *Auditor) CallRow(ctx context.Context, writer, callID string) (Row, bool, error) {
	out, err := a.cfg.Client.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(a.cfg.Table),
		KeyConditionExpression:    aws.String("#k = :k"),
		ExpressionAttributeNames:  map[string]string{"#k": KeyAttribute},
		ExpressionAttributeValues: map[string]types.AttributeValue{":k": &types.AttributeValueMemberS{Value: RowKey(writer, callID)}},
		ConsistentRead:            aws.Bool(true),
	})
	if err != nil {
		return Row{}, false, fmt.Errorf("audit: query row: %w", err)
	}
	if len(out.Items) == 0 {
		return Row{}, false, nil
	}
	r, err := rowFromItem(out.Items[0])
	if err != nil {
		return Row{}, false, fmt.Errorf("audit: decode row: %w", err)
	}
	return r, true, nil
}

// WriterOf is the writer part of a row's key: Writer, or Tool when the row
// does not name one.
func WriterOf(r *Row) string { return r.writerName() }

// EntityDimension is the dimension this auditor indexes as the entity.
func (a *Auditor) EntityDimension() string { return a.cfg.EntityDimension }

// CallerKeyOf is the caller key of a row's verified caller, as the byCaller
// index holds it ("" when the row has no verified caller).
func CallerKeyOf(r *Row) string {
	if r.CallerSubject == "" {
		return ""
	}
	return callerOf(r).Key()
}
