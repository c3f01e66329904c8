package audit

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Index names of the audit table (template.yaml's AuditTable).
const (
	IndexByTrace  = "byTrace"  // traceId, startedAt
	IndexByCaller = "byCaller" // callerKey, startedAt
	IndexByEntity = "byEntity" // entityKey, startedAt
)

// QueryOptions narrows a query by time and size. Zero values mean no bound.
type QueryOptions struct {
	Since, Until time.Time
	Limit        int  // at most this many rows (0: all)
	Newest       bool // newest first (default oldest first)
}

// TraceRows returns every row of a trace, oldest first.
func (a *Auditor) TraceRows(ctx context.Context, traceID string) ([]Row, error) {
	return a.query(ctx, IndexByTrace, "traceId", traceID, QueryOptions{})
}

// CallerRows returns the calls made by one verified principal (subject,
// issuer, auth method and tenant: see [Caller.Key]).
func (a *Auditor) CallerRows(ctx context.Context, c Caller, opts QueryOptions) ([]Row, error) {
	return a.CallerKeyRows(ctx, c.Key(), opts)
}

// CallerKeyRows returns the calls whose callerKey is key, as listings print
// it. Rows written before the key named the issuer and tenant have the
// bare subject as their key, which this finds too.
func (a *Auditor) CallerKeyRows(ctx context.Context, key string, opts QueryOptions) ([]Row, error) {
	return a.query(ctx, IndexByCaller, "callerKey", key, opts)
}

// EntityRows returns the calls whose dimension name had the given value.
func (a *Auditor) EntityRows(ctx context.Context, dimension, value string, opts QueryOptions) ([]Row, error) {
	return a.query(ctx, IndexByEntity, "entityKey", EntityKey(dimension, value), opts)
}

func (a *Auditor) query(ctx context.Context, index, keyAttr, key string, opts QueryOptions) ([]Row, error) {
	cond := "#k = :k"
	values := map[string]types.AttributeValue{":k": &types.AttributeValueMemberS{Value: key}}
	names := map[string]string{"#k": keyAttr}
	switch {
	case !opts.Since.IsZero() && !opts.Until.IsZero():
		cond += " AND #t BETWEEN :since AND :until"
	case !opts.Since.IsZero():
		cond += " AND #t >= :since"
	case !opts.Until.IsZero():
		cond += " AND #t <= :until"
	}
	if !opts.Since.IsZero() {
		values[":since"] = &types.AttributeValueMemberS{Value: opts.Since.UTC().Format(StartedAtLayout)}
		names["#t"] = "startedAt"
	}
	if !opts.Until.IsZero() {
		values[":until"] = &types.AttributeValueMemberS{Value: opts.Until.UTC().Format(StartedAtLayout)}
		names["#t"] = "startedAt"
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(a.cfg.Table),
		IndexName:                 aws.String(index),
		KeyConditionExpression:    aws.String(cond),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
		ScanIndexForward:          aws.Bool(!opts.Newest),
	}
	var rows []Row
	for {
		if opts.Limit > 0 {
			in.Limit = aws.Int32(int32(min(opts.Limit-len(rows), 1000)))
		}
		out, err := a.cfg.Client.Query(ctx, in)
		if err != nil {
			return rows, fmt.Errorf("audit: query %s: %w", index, err)
		}
		for _, item := range out.Items {
			r, err := rowFromItem(item)
			if err != nil {
				return rows, fmt.Errorf("audit: decode row: %w", err)
			}
			rows = append(rows, r)
		}
		if len(out.LastEvaluatedKey) == 0 || (opts.Limit > 0 && len(rows) >= opts.Limit) {
			return rows, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// WriteTraceTree prints the rows of one trace as a tree under the trace id:
// a row nests under the row whose spanId is its parentSpanId; rows whose
// parent is not among them (the Lambda segment, another service) are roots.
// Siblings are in start order.
func WriteTraceTree(w io.Writer, traceID string, rows []Row) error {
	bySpan := make(map[string]bool, len(rows))
	for _, r := range rows {
		bySpan[r.SpanID] = true
	}
	children := map[string][]Row{}
	var roots []Row
	for _, r := range rows {
		if r.ParentSpanID != "" && r.ParentSpanID != r.SpanID && bySpan[r.ParentSpanID] {
			children[r.ParentSpanID] = append(children[r.ParentSpanID], r)
		} else {
			roots = append(roots, r)
		}
	}
	byStart := func(rs []Row) {
		sort.SliceStable(rs, func(i, j int) bool {
			if !rs[i].StartedAt.Equal(rs[j].StartedAt) {
				return rs[i].StartedAt.Before(rs[j].StartedAt)
			}
			return rs[i].CallID < rs[j].CallID
		})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "trace %s (%d rows)\n", traceID, len(rows))
	seen := map[string]bool{} // guards against a cycle in bad data
	var walk func(rs []Row, indent string)
	walk = func(rs []Row, indent string) {
		byStart(rs)
		for i, r := range rs {
			branch, next := "├─ ", "│  "
			if i == len(rs)-1 {
				branch, next = "└─ ", "   "
			}
			b.WriteString(indent + branch + rowSummary(r) + "\n")
			if seen[r.SpanID] {
				continue
			}
			seen[r.SpanID] = true
			walk(children[r.SpanID], indent+next)
		}
	}
	walk(roots, "")
	_, err := io.WriteString(w, b.String())
	return err
}

// rowSummary is the one-line form of a row used by the CLI.
func rowSummary(r Row) string {
	outcome := "ok"
	switch {
	case r.Status == StatusPending:
		outcome = "PENDING"
	case !r.OK:
		outcome = "error " + r.ErrorCode
	}
	s := fmt.Sprintf("%s %s %s %.1fms span=%s call=%s",
		r.StartedAt.UTC().Format("2006-01-02T15:04:05.000Z"), r.Tool, outcome, r.DurationMs, r.SpanID, r.CallID)
	if r.ParentSpanID != "" {
		s += " parent=" + r.ParentSpanID
	}
	if r.CallerSubject != "" {
		s += " caller=" + callerOf(&r).Key()
	}
	if len(r.Dimensions) > 0 {
		keys := make([]string, 0, len(r.Dimensions))
		for k := range r.Dimensions {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			s += " " + k + "=" + r.Dimensions[k]
		}
	}
	return s
}

// WriteRows prints rows one per line, in the given order. Outside a trace
// tree each line also names its trace, the key to `mcpfn-audit trace`.
func WriteRows(w io.Writer, rows []Row) error {
	var b strings.Builder
	for _, r := range rows {
		b.WriteString(rowSummary(r))
		if r.TraceID != "" {
			b.WriteString(" trace=" + r.TraceID)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
