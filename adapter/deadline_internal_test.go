package adapter

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/internal/dynamolocal"
	"github.com/mcpfn/mcpfn/internal/lambdatest"
	"github.com/mcpfn/mcpfn/wire"
)

// lateSignal is an auditor that says when a late outcome has been handed to
// it and written.
type lateSignal struct {
	*audit.Auditor
	written chan struct{}
}

func (l lateSignal) Late(ctx context.Context, row *audit.Row) {
	l.Auditor.Late(ctx, row)
	close(l.written)
}

// deadlineAt makes a call's deadline come at an event: the call's context
// ends, as at its deadline, once event is closed (or at the deadline the
// call was given, if that comes first). The invocation's own context, which
// bounds the audit's writes, is left as it is.
func deadlineAt(event <-chan struct{}) callDeadlineFunc {
	return func(ctx context.Context, deadline time.Time) (context.Context, context.CancelFunc) {
		ctx, cancel := context.WithDeadline(ctx, deadline)
		ctx, end := context.WithCancelCause(ctx)
		go func() {
			select {
			case <-event:
				end(context.DeadlineExceeded)
			case <-ctx.Done():
			}
		}()
		return ctx, func() { end(context.Canceled); cancel() }
	}
}

// TestDestructiveTimeoutIsOutcomeUnknownThenLate, through the Lambda entry
// point and DynamoDB Local: a destructive handler that outlives its deadline
// is answered TIMEOUT, not retryable, "may have taken effect"; its row (the
// pending row, completed) says stage handler, TIMEOUT, outcome unknown,
// never a plain failure; and when the handler finishes later in the same
// process, the row records that.
//
// The deadline comes once the handler has started (withCallDeadline): the
// write-ahead row before it is a real DynamoDB Local round trip, which took
// over 3 s on a machine at load 20, and a deadline at a fixed time then fell
// before the handler (a retryable TIMEOUT: right, but not this test's
// stage). The deadline's own arithmetic (the reserve) is the audit package's
// TestAdapterHangingHookLeavesItsFinalRow.
func TestDestructiveTimeoutIsOutcomeUnknownThenLate(t *testing.T) {
	const name, callID = "broadcast_delete", "call-slow"
	srv, table := dynamolocal.TemplateTableForTest(t, "AuditTable", "audit")
	client := srv.Client(context.Background())
	type in struct {
		ID string `json:"id"`
	}
	release, started := make(chan struct{}), make(chan struct{})
	var runs atomic.Int32
	tool := MustDefine(ToolDef[in, struct{ Deleted string }]{
		Name:        name,
		Destructive: true,
		Handler: func(_ context.Context, _ *Call, in in) (struct{ Deleted string }, error) {
			if runs.Add(1) == 1 {
				close(started)
			}
			<-release // a client library that ignores the context
			return struct{ Deleted string }{in.ID}, nil
		},
	})
	rec := lateSignal{audit.New(audit.Config{Table: table, Client: client, Fallback: io.Discard}), make(chan struct{})}
	f := New(tool, WithCallVerifier(lambdatest.Verifier(name)), WithAuditor(rec), WithReserve(700*time.Millisecond),
		WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	ctx, cancel := lambdatest.Context(context.Background(), lambdatest.Invocation{
		RequestID:   "req-slow",
		FunctionARN: "arn:aws:lambda:us-east-1:123456789012:function:" + name,
		Timeout:     5 * time.Minute, // bounds the rows' writes; the call's deadline is at started
	})
	defer cancel()
	ctx = withCallDeadline(ctx, deadlineAt(started))
	args := []byte(`{"id":"b-7"}`)
	payload, err := json.Marshal(wire.Envelope{
		Version: wire.EnvelopeVersion, CallID: callID,
		Params:    wire.EnvelopeParams{Name: name, Arguments: args},
		CallToken: lambdatest.Token(name, name, callID, &Identity{Subject: "user-7", AuthMethod: "jwt"}, args),
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := lambda.NewHandler(f).Invoke(ctx, payload)
	if err != nil {
		t.Fatal(err)
	}
	var answer struct {
		Result struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	var body struct {
		Error     string `json:"error"`
		Retryable bool   `json:"retryable"`
		Hint      string `json:"hint"`
	}
	if err := json.Unmarshal(out, &answer); err != nil || !answer.Result.IsError || len(answer.Result.Content) != 1 ||
		json.Unmarshal([]byte(answer.Result.Content[0].Text), &body) != nil {
		t.Fatalf("answer %s (%v): want an error result with its body", out, err)
	}
	if body.Error != "TIMEOUT" || body.Retryable || !strings.Contains(body.Hint, "may have taken effect") {
		t.Fatalf("answer: %+v", body)
	}
	row := func() map[string]string {
		t.Helper()
		it, err := client.GetItem(context.Background(), &dynamodb.GetItemInput{
			TableName: aws.String(table), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{audit.KeyAttribute: &types.AttributeValueMemberS{Value: audit.RowKey(name, callID)}},
		})
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for k, v := range it.Item {
			if s, ok := v.(*types.AttributeValueMemberS); ok {
				m[k] = s.Value
			}
		}
		return m
	}
	it := row()
	if it["status"] != audit.StatusDone || it["stage"] != "handler" || it["errorCode"] != "TIMEOUT" ||
		it["outcome"] != audit.OutcomeUnknown || it["lateOutcome"] != "" || it["attemptId"] == "" {
		t.Fatalf("row at the deadline: %v", it)
	}

	close(release)
	select {
	case <-rec.written:
	case <-time.After(30 * time.Second): // a safety net, not a timing assertion
		t.Fatal("the handler's late end was never recorded")
	}
	it = row()
	if it["lateOutcome"] != "ok" || it["finishedAt"] == "" || it["finishedAt"] <= it["startedAt"] ||
		it["outcome"] != audit.OutcomeUnknown || it["errorCode"] != "TIMEOUT" || it["status"] != audit.StatusDone {
		t.Errorf("row after the late end: %v", it)
	}
	if runs.Load() != 1 {
		t.Errorf("the handler ran %d times", runs.Load())
	}
}
