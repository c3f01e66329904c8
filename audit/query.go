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

// WriteTraceTree prints the rows of one trace as a tree of calls under the
// trace id: the rows of a call (the function's and the gateway's) are one
// line, the call's outcome row (see [Call]), which says which row it is when
// the gateway wrote one. A call nests under the call one of whose rows'
// spanId is its outcome row's parentSpanId; calls whose parent is not among
// them (the Lambda segment, another service) are roots. Siblings are in
// start order.
func WriteTraceTree(w io.Writer, traceID string, rows []Row) error {
	return WriteCallTree(w, traceID, JoinCalls(rows))
}

// WriteCallTree is [WriteTraceTree] of calls already joined (and
// completed: [Auditor.CompleteCalls]).
func WriteCallTree(w io.Writer, traceID string, calls []Call) error {
	bySpan := make(map[string]int, len(calls))
	nrows := 0
	for i := range calls {
		for _, r := range calls[i].Rows() {
			nrows++
			if _, ok := bySpan[r.SpanID]; !ok && r.SpanID != "" {
				bySpan[r.SpanID] = i
			}
		}
	}
	children := map[int][]int{}
	var roots []int
	for i := range calls {
		o := calls[i].Outcome()
		if p, ok := bySpan[o.ParentSpanID]; ok && o.ParentSpanID != "" && p != i {
			children[p] = append(children[p], i)
		} else {
			roots = append(roots, i)
		}
	}
	byStart := func(cs []int) {
		sort.SliceStable(cs, func(i, j int) bool {
			a, b := calls[cs[i]].Outcome(), calls[cs[j]].Outcome()
			if !a.StartedAt.Equal(b.StartedAt) {
				return a.StartedAt.Before(b.StartedAt)
			}
			return a.CallID < b.CallID
		})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "trace %s (%d rows)\n", traceID, nrows)
	seen := map[int]bool{} // guards against a cycle in bad data
	var walk func(cs []int, indent string)
	walk = func(cs []int, indent string) {
		byStart(cs)
		for i, c := range cs {
			branch, next := "├─ ", "│  "
			if i == len(cs)-1 {
				branch, next = "└─ ", "   "
			}
			b.WriteString(indent + branch + callSummary(&calls[c]) + "\n")
			if seen[c] {
				continue
			}
			seen[c] = true
			walk(children[c], indent+next)
		}
	}
	walk(roots, "")
	_, err := io.WriteString(w, b.String())
	return err
}

// callSummary is the one-line form of a call: its outcome row's, and, when
// the gateway wrote a row, which row is the outcome and what the other
// says.
func callSummary(c *Call) string {
	s := rowSummary(*c.Outcome())
	switch {
	case c.OutcomeBy == OutcomeByGateway:
		s += " outcome-row=gateway"
		if c.Function != nil {
			s += " function-row=" + rowState(c.Function)
		}
	case c.Gateway != nil:
		s += " outcome-row=function gateway-row=" + rowState(c.Gateway)
	}
	return s
}

// rowState is a row's outcome in one word: pending, ok or its error code.
func rowState(r *Row) string {
	switch {
	case r.Status == StatusPending:
		return "pending"
	case r.OK:
		return "ok"
	case r.ErrorCode != "":
		return r.ErrorCode
	}
	return "error"
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
	if r.Outcome != "" {
		// The call was answered without knowing whether it took effect.
		s += " outcome=" + r.Outcome
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

// WriteCalls prints calls one per line, in the given order, as
// [WriteTraceTree] prints them; each line also names its trace, the key to
// `mcpfn audit trace`.
func WriteCalls(w io.Writer, calls []Call) error {
	var b strings.Builder
	for i := range calls {
		b.WriteString(callSummary(&calls[i]))
		if t := calls[i].Outcome().TraceID; t != "" {
			b.WriteString(" trace=" + t)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteRows prints rows one per line, in the given order, each on its own
// (see [WriteCalls] for calls). Outside a trace tree each line also names
// its trace, the key to `mcpfn audit trace`.
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
