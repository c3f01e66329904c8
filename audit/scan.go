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

// maxScanned is MaxScanned, lowered by a test.
var maxScanned = MaxScanned

// rowsPerSegment is about how many rows one segment of RecentRows' Scan
// holds. DynamoDB Local answers a Scan page only after loading every item
// of the table (or of the segment) into its heap: a plain Scan's time grew
// with the square of the table, and past ~70,000 rows at a 512 MiB heap it
// failed (docs/benchmarks.md, "DynamoDB Local under a long session"). In
// segments of this size each page loads one segment.
const rowsPerSegment = 1000

// defaultSegments is RecentRows' split when the client cannot say how many
// items the table holds (no DescribeTable).
const defaultSegments = 16

// TableDescriber is the optional part of a RecentRows client: with it the
// Scan is split by the table's item count (an estimate on DynamoDB, which
// refreshes it about every six hours).
type TableDescriber interface {
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// RecentRows returns the rows started within opts.Since..opts.Until (either
// may be zero), newest first, at most opts.Limit of them (0: all). The table
// has indexes by trace, caller and entity only, so this is a Scan with a time
// filter, which reads (and pays for) every row of the table: meant for a
// local or debugging viewer, not for a hot path. It reads the table in
// segments of about a thousand rows, one after the other, and stops after
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
	segments := a.scanSegments(ctx)
	scanned := 0
segments:
	for seg := range segments {
		if segments > 1 {
			in.Segment, in.TotalSegments = aws.Int32(seg), aws.Int32(segments)
		}
		in.ExclusiveStartKey = nil
		for {
			out, err := sc.Scan(ctx, in)
			if err != nil {
				return rows, truncated, fmt.Errorf("audit: scan (segment %d of %d): %w", seg, segments, err)
			}
			scanned += int(out.ScannedCount)
			for _, item := range out.Items {
				r, err := rowFromItem(item)
				if err != nil {
					return rows, truncated, fmt.Errorf("audit: decode row: %w", err)
				}
				rows = append(rows, r)
			}
			more := len(out.LastEvaluatedKey) > 0
			if scanned >= maxScanned && (more || seg < segments-1) {
				truncated = true
				break segments
			}
			if !more {
				break
			}
			in.ExclusiveStartKey = out.LastEvaluatedKey
		}
	}
	SortNewestFirst(rows)
	if opts.Limit > 0 && len(rows) > opts.Limit {
		rows, truncated = rows[:opts.Limit], true
	}
	return rows, truncated, nil
}

// scanSegments is how many segments RecentRows splits the table into:
// about one per rowsPerSegment items, by the table's item count when the
// client can describe the table, defaultSegments when it cannot.
func (a *Auditor) scanSegments(ctx context.Context) int32 {
	d, ok := a.cfg.Client.(TableDescriber)
	if !ok {
		return defaultSegments
	}
	out, err := d.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(a.cfg.Table)})
	if err != nil || out.Table == nil || out.Table.ItemCount == nil {
		return defaultSegments
	}
	return int32(min(max(*out.Table.ItemCount/rowsPerSegment, 1), 1_000_000)) // DynamoDB's limit
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
