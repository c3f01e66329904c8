package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// DynamoAPI is the part of *dynamodb.Client the audit package uses.
type DynamoAPI interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// Config configures an [Auditor]. Only Table and Client are required.
type Config struct {
	Table   string
	Client  DynamoAPI
	Emitter SpanEmitter // nil: no spans are emitted
	// Fallback receives one JSON line per row that could not be written in
	// time, or whose write was refused (default os.Stdout, which Lambda
	// sends to CloudWatch Logs).
	Fallback io.Writer
	// Logger receives a warning for each final row refused by its
	// conditional write (default slog.Default()).
	Logger *slog.Logger
	// TTL sets expiresAt = startedAt + TTL (default 90 days; negative: never).
	TTL time.Duration
	Now func() time.Time
	// MaxAttempts bounds the PutItem attempts per row (default 5).
	MaxAttempts int
	// EntityDimension names the dimension indexed as entityKey (default "entityId").
	EntityDimension string
	// Reserve is kept back from ctx's deadline so the fallback line is
	// printed before Lambda freezes the process (default 100 ms).
	Reserve time.Duration
	// AttemptTimeout caps one PutItem, so a hung connection cannot eat the
	// whole budget (default 2 s).
	AttemptTimeout time.Duration
	// Budget bounds all attempts of one write when ctx has no deadline
	// (default 10 s), counted from the write's first attempt: the wait for
	// a writer (MaxInFlight) is not part of it.
	Budget time.Duration
	// MaxInFlight bounds the DynamoDB requests the Auditor has in flight at
	// once (default DefaultMaxInFlight); a write beyond it waits for one to
	// end, within ctx's deadline less the reserve. A burst of rows sent all
	// at once to a table that shares itself among them (DynamoDB Local on
	// a busy machine, a throttled table) makes every request as slow as
	// the whole burst, so every attempt times out and every row falls
	// back; in turns, each request takes only its turn's share.
	MaxInFlight int
	// FlushTimeout bounds the export of a buffering emitter's spans
	// (OpenTelemetry) when ctx has no deadline (default 2 s).
	FlushTimeout time.Duration
}

// Default values of [Config].
const (
	DefaultTTL             = 90 * 24 * time.Hour
	DefaultMaxAttempts     = 5
	DefaultEntityDimension = "entityId"
	// DefaultMaxInFlight: with DynamoDB's few milliseconds per write, still
	// a thousand rows a second and more per process; and the AWS SDK's
	// idle connections per host, so a burst reuses warm connections.
	DefaultMaxInFlight = 10

	// FallbackMarker is the key that identifies a fallback log line.
	FallbackMarker = "mcpfnAuditFallback"
)

// Auditor writes audit rows and emits their spans. It is safe for
// concurrent use; create one per process (at cold start) and share it.
type Auditor struct {
	cfg Config
	// writers holds a token per request in flight (cap MaxInFlight).
	writers chan struct{}
	outMu   sync.Mutex // one fallback line per Write, never interleaved
	stats   struct {
		written, duplicates, refused, attempts, retries, fallbacks atomic.Int64
	}
}

// Stats counts what an Auditor has done since it was created.
type Stats struct {
	Written int64 // rows put (new, or completing a pending row)
	// Duplicates counts the writes refused by their condition: the row's
	// own copy was there already (success), or, counted in Refused too,
	// another execution's row of the call.
	Duplicates int64
	// Refused counts the final rows refused because their key holds the
	// row of another execution of the call (a retried or replayed call id,
	// a destructive call's refused second attempt). Each is printed to
	// Fallback and logged, never dropped in silence (docs/audit.md).
	Refused   int64
	Attempts  int64 // PutItem requests sent
	Retries   int64 // attempts after a retryable failure
	Fallbacks int64 // rows that could not be written, printed to Fallback instead
}

// New returns an Auditor for cfg, filling in defaults.
func New(cfg Config) *Auditor {
	if cfg.Fallback == nil {
		cfg.Fallback = os.Stdout
	}
	if cfg.TTL == 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.EntityDimension == "" {
		cfg.EntityDimension = DefaultEntityDimension
	}
	if cfg.Reserve <= 0 {
		cfg.Reserve = 100 * time.Millisecond
	}
	if cfg.AttemptTimeout <= 0 {
		cfg.AttemptTimeout = 2 * time.Second
	}
	if cfg.Budget <= 0 {
		cfg.Budget = 10 * time.Second
	}
	if cfg.FlushTimeout <= 0 {
		cfg.FlushTimeout = 2 * time.Second
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = DefaultMaxInFlight
	}
	return &Auditor{cfg: cfg, writers: make(chan struct{}, cfg.MaxInFlight)}
}

// Emitter returns the span emitter the Auditor sends its rows' spans to
// (nil: none), for a caller that emits spans of its own beside the rows.
func (a *Auditor) Emitter() SpanEmitter { return a.cfg.Emitter }

// Table returns the table the Auditor writes to.
func (a *Auditor) Table() string { return a.cfg.Table }

// Stats returns a snapshot of the Auditor's counters.
func (a *Auditor) Stats() Stats {
	return Stats{
		Written:    a.stats.written.Load(),
		Duplicates: a.stats.duplicates.Load(),
		Refused:    a.stats.refused.Load(),
		Attempts:   a.stats.attempts.Load(),
		Retries:    a.stats.retries.Load(),
		Fallbacks:  a.stats.fallbacks.Load(),
	}
}

// Pending writes the write-ahead row of a destructive tool before its
// handler runs (Status "pending", no span), so a crash or timeout still
// leaves evidence. It fills in row's missing ids exactly as Record would,
// and an AttemptID when row has none; pass the same row to Record afterwards
// so the final row completes this one (only the attempt that wrote a pending
// row can complete it).
//
// The write never overwrites a row. When the call id already has a row from
// another attempt, nothing is written and that row is returned as prior: the
// caller must not run the call again. The row comes back with the refused
// write itself (ReturnValuesOnConditionCheckFailure), so the check costs no
// extra round trip. A row that cannot be written in time is printed to the
// fallback writer and the error is returned: no evidence is in the table.
func (a *Auditor) Pending(ctx context.Context, row *Row) (prior *Row, err error) {
	if a == nil || row == nil {
		return nil, nil
	}
	if row.AttemptID == "" {
		row.AttemptID = NewAttemptID()
	}
	a.prepare(row, StatusPending)
	_, old, err := a.put(ctx, itemFor(row, a.cfg.EntityDimension), row)
	if err == nil && old != nil {
		p, perr := rowFromItem(old)
		switch {
		case perr != nil:
			// A row is there, whatever it says.
			return &Row{CallID: row.CallID, Status: "unreadable"}, nil
		case p.AttemptID != row.AttemptID:
			return &p, nil
		}
		// This attempt's own write, sent again after a lost answer.
	}
	if err != nil {
		a.fallback(row, err)
		return nil, err
	}
	return nil, nil
}

// Record writes the final row of a call and emits its span.
//
// Ids: a row without TraceID belongs to a call that arrived without a trace
// header; it gets a fresh trace id, no parent, and its span is a segment of
// its own. A row with TraceID and ParentSpanID gets a subsegment of that
// parent. SpanID, when empty, is minted, and is the id of the emitted span.
// A row with Sampled "0" emits nothing but keeps its ids. Record fills these
// into row, with the sanitized ArgsPreview and ExpiresAt.
//
// The write is one conditional PutItem: it creates the row or completes a
// pending one, and a retried call (same CallID) whose row exists is a
// success. Throttling, 5xx and network errors are retried with backoff within
// ctx's deadline less the reserve; a row that still cannot be written is
// printed to the fallback writer. Record never returns an error.
func (a *Auditor) Record(ctx context.Context, row *Row) {
	if a == nil || row == nil {
		return
	}
	a.prepare(row, StatusDone)
	emitted := a.cfg.Emitter != nil && row.Sampled != "0"
	if emitted {
		a.cfg.Emitter.EmitSpan(spanFor(row))
	}
	a.write(ctx, row)
	if emitted {
		a.flush(ctx)
	}
}

// flush exports a buffering emitter's spans before Record returns, since
// Lambda may freeze the process as soon as the call is answered. It gets
// what is left of ctx's deadline less half the reserve (the other half is
// for answering), or FlushTimeout without a deadline. An emitter that does
// not buffer (X-Ray, UDP) has nothing to flush.
func (a *Auditor) flush(ctx context.Context) {
	if _, ok := a.cfg.Emitter.(SpanFlusher); !ok {
		return
	}
	// The call's context may be cancelled already; its deadline still
	// bounds the invocation.
	d, hasDeadline := ctx.Deadline()
	ctx = context.WithoutCancel(ctx)
	if hasDeadline {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-a.cfg.Reserve/2))
		defer cancel()
	}
	_ = FlushSpans(ctx, a.cfg.Emitter, a.cfg.FlushTimeout)
}

// prepare settles the row's ids, preview and limits before anything is sent.
func (a *Auditor) prepare(row *Row, status string) {
	row.Status = status
	a.settleIDs(row)
	if row.Arguments != nil {
		row.ArgsPreview, row.ArgsTruncated = SanitizeArgs(row.Arguments)
	}
	fillDigests(row)
	if row.ExpiresAt == 0 && a.cfg.TTL > 0 {
		row.ExpiresAt = row.StartedAt.Add(a.cfg.TTL).Unix()
	}
	scrubRow(row, false)
	clampRow(row, a.cfg.EntityDimension)
}

// settleIDs fills in a row's start time, trace and span ids when missing.
func (a *Auditor) settleIDs(row *Row) {
	if row.StartedAt.IsZero() {
		row.StartedAt = a.cfg.Now()
	}
	if row.TraceID == "" {
		// No trace header: the call is the root of a new trace. A parent id
		// without a trace would name a segment nobody sent.
		row.TraceID = NewTraceID(row.StartedAt)
		row.ParentSpanID = ""
	}
	if row.SpanID == "" {
		row.SpanID = NewSpanID()
	}
}

func (a *Auditor) write(ctx context.Context, row *Row) {
	res, held, err := a.put(ctx, itemFor(row, a.cfg.EntityDimension), row)
	switch {
	case err != nil:
		a.fallback(row, err)
	case res == putRefused:
		a.refuse(row, held)
	}
}

// refuse keeps a final row that lost its conditional write: its key holds
// the row of another execution of the call (held; nil when the store did
// not return it). That row stays, as the call's evidence; this one is
// printed as a fallback line with the reason (Replay counts it refused
// again, never writes it) and logged, so a refusal is never silent.
func (a *Auditor) refuse(row *Row, held map[string]types.AttributeValue) {
	a.stats.refused.Add(1)
	reason := "refused: " + row.Key() + " already holds the row of another execution of the call"
	attrs := []any{"table", a.cfg.Table, "key", row.Key(), "callId", row.CallID, "spanId", row.SpanID}
	if h, err := rowFromItem(held); len(held) > 0 && err == nil {
		reason += fmt.Sprintf(" (status %s, span %s)", h.Status, h.SpanID)
		attrs = append(attrs, "heldStatus", h.Status, "heldSpanId", h.SpanID)
	}
	a.cfg.Logger.Warn("mcpfn audit: a final row was refused by its conditional write and printed as a fallback line", attrs...)
	a.print(row, errors.New(reason))
}

// Late adds to a call's final row how its handler ended after the call had
// been answered: row carries CallID, AttemptID, LateOutcome ("ok" or
// "error"), LateErrorCode and FinishedAt; nothing else of it is written. The
// update applies only to the row of the same attempt, once. A late outcome
// that cannot be written is printed to the fallback writer (Status "late"),
// which [Replay] applies the same way.
func (a *Auditor) Late(ctx context.Context, row *Row) {
	if a == nil || row == nil || row.CallID == "" || row.AttemptID == "" {
		return
	}
	row.Status = StatusLate
	if row.FinishedAt == nil {
		now := a.cfg.Now().UTC()
		row.FinishedAt = &now
	}
	clampRow(row, a.cfg.EntityDimension)
	if _, err := a.late(ctx, row); err != nil {
		a.fallback(row, err)
	}
}

// late sends the conditional update of a late outcome.
func (a *Auditor) late(ctx context.Context, row *Row) (string, error) {
	if a.cfg.Client == nil || a.cfg.Table == "" {
		return "", errors.New("audit: no DynamoDB client or table configured")
	}
	values := map[string]types.AttributeValue{
		":attempt":  &types.AttributeValueMemberS{Value: row.AttemptID},
		":outcome":  &types.AttributeValueMemberS{Value: row.LateOutcome},
		":finished": &types.AttributeValueMemberS{Value: row.FinishedAt.UTC().Format(StartedAtLayout)},
	}
	update := "SET lateOutcome = :outcome, finishedAt = :finished"
	if row.LateErrorCode != "" {
		values[":code"] = &types.AttributeValueMemberS{Value: row.LateErrorCode}
		update += ", lateErrorCode = :code"
	}
	in := &dynamodb.UpdateItemInput{
		TableName:                 aws.String(a.cfg.Table),
		Key:                       map[string]types.AttributeValue{KeyAttribute: &types.AttributeValueMemberS{Value: row.Key()}},
		UpdateExpression:          aws.String(update),
		ConditionExpression:       aws.String("attemptId = :attempt AND attribute_not_exists(lateOutcome)"),
		ExpressionAttributeValues: values,
	}
	err := a.send(ctx, func(actx context.Context, opt func(*dynamodb.Options)) error {
		_, err := a.cfg.Client.UpdateItem(actx, in, opt)
		return err
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		a.stats.written.Add(1)
		return putWritten, nil
	case errors.As(err, &ccf):
		// Another attempt's row, or the late outcome is already there.
		a.stats.duplicates.Add(1)
		return putDuplicate, nil
	}
	return "", err
}

// Put outcomes.
const (
	putWritten   = "written"
	putDuplicate = "duplicate"
	// putRefused: a final row whose key holds another execution's row.
	putRefused = "refused"
)

// put writes one item of row with bounded, deadline-aware retries. A write
// refused by its condition is not an error: the row in the way comes back
// with the refusal. For a final row, put tells its own earlier write (the
// same span: an answer lost and the request sent again) — a duplicate —
// from another execution's row — refused.
func (a *Auditor) put(ctx context.Context, item map[string]types.AttributeValue, row *Row) (string, map[string]types.AttributeValue, error) {
	if a.cfg.Client == nil || a.cfg.Table == "" {
		return "", nil, errors.New("audit: no DynamoDB client or table configured")
	}
	in := &dynamodb.PutItemInput{
		TableName: aws.String(a.cfg.Table),
		Item:      item,
	}
	switch {
	case row.Status == StatusPending:
		// A pending row never overwrites anything, least of all a final
		// row; the row in the way comes back with the refusal.
		in.ConditionExpression = aws.String("attribute_not_exists(rowKey)")
		in.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	case row.AttemptID != "":
		// A final row creates the row or completes the pending row of its
		// own attempt. Any other row there is another attempt's evidence.
		in.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
		in.ConditionExpression = aws.String("attribute_not_exists(rowKey) OR (#status = :pending AND attemptId = :attempt)")
		in.ExpressionAttributeNames = map[string]string{"#status": "status"}
		in.ExpressionAttributeValues = map[string]types.AttributeValue{
			":pending": &types.AttributeValueMemberS{Value: StatusPending},
			":attempt": &types.AttributeValueMemberS{Value: row.AttemptID},
		}
	default:
		// A row from before attempt ids (a replayed old log line)
		// completes only a pending row that has none either.
		in.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
		in.ConditionExpression = aws.String("attribute_not_exists(rowKey) OR (#status = :pending AND attribute_not_exists(attemptId))")
		in.ExpressionAttributeNames = map[string]string{"#status": "status"}
		in.ExpressionAttributeValues = map[string]types.AttributeValue{
			":pending": &types.AttributeValueMemberS{Value: StatusPending},
		}
	}
	err := a.send(ctx, func(actx context.Context, opt func(*dynamodb.Options)) error {
		_, err := a.cfg.Client.PutItem(actx, in, opt)
		return err
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		a.stats.written.Add(1)
		return putWritten, nil, nil
	case errors.As(err, &ccf):
		a.stats.duplicates.Add(1)
		if row.Status != StatusPending {
			if ownFinal(ccf.Item, row) {
				return putDuplicate, ccf.Item, nil
			}
			return putRefused, ccf.Item, nil
		}
		if ccf.Item == nil {
			// The store did not return the row in the way; a row
			// with only the key still refuses a second execution.
			ccf.Item = map[string]types.AttributeValue{
				KeyAttribute: &types.AttributeValueMemberS{Value: row.Key()},
				"callId":     &types.AttributeValueMemberS{Value: row.CallID},
			}
		}
		return putDuplicate, ccf.Item, nil
	}
	return "", nil, fmt.Errorf("audit: put %s: %w", a.cfg.Table, err)
}

// ownFinal reports whether held, the item that refused row's final write,
// is that same row already written: final, with row's span id (each
// execution has a span of its own). A refusal without the item in the way
// is not known to be the row's own.
func ownFinal(held map[string]types.AttributeValue, row *Row) bool {
	status, _ := held["status"].(*types.AttributeValueMemberS)
	span, _ := held["spanId"].(*types.AttributeValueMemberS)
	return status != nil && span != nil && status.Value == StatusDone && span.Value == row.SpanID
}

// send runs one DynamoDB request with bounded, deadline-aware retries. The
// SDK's own retryer is switched off for these requests (op receives the
// option that does it): two nested retry loops would multiply the attempts
// and ignore the reserve this loop keeps. A condition failure is returned
// at once, as every error that is not retryable.
//
// Each attempt first takes a writer (MaxInFlight), and gives it back when
// its request ends, backoff excluded. Without ctx's deadline the Budget
// starts when the first attempt has its writer: a row queued behind a
// burst is given the same time to be written as the first of the burst.
func (a *Auditor) send(ctx context.Context, op func(context.Context, func(*dynamodb.Options)) error) error {
	var deadline time.Time // zero: the Budget, from the first attempt
	if d, ok := ctx.Deadline(); ok {
		deadline = d.Add(-a.cfg.Reserve)
	}
	noRetry := func(o *dynamodb.Options) { o.Retryer = aws.NopRetryer{} }
	var lastErr error
	for attempt := 1; attempt <= a.cfg.MaxAttempts; attempt++ {
		if ctx.Err() != nil {
			return errors.Join(ctx.Err(), lastErr)
		}
		if err := a.writer(ctx, deadline); err != nil {
			return errors.Join(err, lastErr)
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(a.cfg.Budget)
		}
		remaining := time.Until(deadline)
		if remaining <= 0 {
			<-a.writers
			return errors.Join(errors.New("audit: no time left before the deadline"), lastErr)
		}
		actx, cancel := context.WithTimeout(ctx, min(remaining, a.cfg.AttemptTimeout))
		a.stats.attempts.Add(1)
		if attempt > 1 {
			a.stats.retries.Add(1)
		}
		err := op(actx, noRetry)
		cancel()
		<-a.writers
		if err == nil {
			return nil
		}
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			return err
		}
		lastErr = err
		if !retryable(err) || attempt == a.cfg.MaxAttempts {
			break
		}
		// Full jitter: concurrent calls throttled together do not retry
		// together.
		backoff := time.Duration(rand.Int64N(int64(min(time.Second, 20*time.Millisecond<<(attempt-1))) + 1))
		if time.Until(deadline) < backoff {
			break
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
	return lastErr
}

// writer waits for a request slot (one of MaxInFlight) until ctx ends or
// deadline (zero: none) passes; the caller gives it back (<-a.writers) when
// its request has ended.
func (a *Auditor) writer(ctx context.Context, deadline time.Time) error {
	select {
	case a.writers <- struct{}{}:
		return nil
	default:
	}
	var expired <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		expired = t.C
	}
	select {
	case a.writers <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("audit: waiting for a writer (%d in flight): %w", a.cfg.MaxInFlight, ctx.Err())
	case <-expired:
		return fmt.Errorf("audit: no time left before the deadline while waiting for a writer (%d in flight)", a.cfg.MaxInFlight)
	}
}

// retryable reports whether a failed PutItem may succeed if sent again:
// throttling, server errors and errors below HTTP (network, attempt timeout).
// Client errors (validation, missing table, access denied) will not.
func retryable(err error) bool {
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() >= 500 {
		return true
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "ProvisionedThroughputExceededException", "ThrottlingException",
			"RequestLimitExceeded", "LimitExceededException",
			"InternalServerError", "ServiceUnavailable", "TransactionConflictException":
			return true
		}
		return api.ErrorFault() == smithy.FaultServer
	}
	return true
}

// fallbackLine is the structured log line of a row that was not written.
// The marker key comes first so a human grepping logs sees it at once.
type fallbackLine struct {
	Marker int    `json:"mcpfnAuditFallback"`
	Table  string `json:"table"`
	Reason string `json:"reason,omitempty"`
	Row    *Row   `json:"row"`
}

func (a *Auditor) fallback(row *Row, reason error) {
	a.stats.fallbacks.Add(1)
	a.print(row, reason)
}

// print writes row's fallback line with its reason.
func (a *Auditor) print(row *Row, reason error) {
	line := fallbackLine{Marker: 1, Table: a.cfg.Table, Row: row}
	if reason != nil {
		line.Reason = SanitizeText(reason.Error(), 1024)
	}
	b, err := json.Marshal(line)
	if err != nil {
		// Only ErrorDetails could fail to marshal, and prepare made it valid;
		// still, a row must not vanish because of its details.
		row.ErrorDetails = nil
		b, _ = json.Marshal(line)
	}
	if len(b) > maxFallbackLine {
		// JSON escaping can grow control characters sixfold, so a row that
		// fits DynamoDB may still exceed a CloudWatch Logs event, which would
		// be cut and unreplayable. Shrink the bulky fields of a copy.
		small := *row
		shrinkForLog(&small, a.cfg.EntityDimension)
		line.Row = &small
		b, _ = json.Marshal(line)
	}
	b = append(b, '\n')
	a.outMu.Lock()
	defer a.outMu.Unlock()
	_, _ = a.cfg.Fallback.Write(b)
}
