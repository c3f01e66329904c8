package adapter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/internal/dynamolocal"
	"github.com/mcpfn/mcpfn/internal/lambdatest"
	"github.com/mcpfn/mcpfn/wire"
)

// TestAnswerEndsTheInvocationWhenTheRuntimeIsDoneWithIt: in the
// after-response mode the audit's rows are built and written when the
// invocation is answered. Under Start (withRowsWrittenBeforeNext) that is
// when aws-lambda-go closes the answer's reader, which it does once it has
// posted it — not when it has read it: the row must not compete with the
// POST — and the Close returns only once the row is written: aws-lambda-go
// asks for the next invocation after it, so the environment is neither
// frozen nor reused before. Any other reader ends the invocation by reading
// the answer to its end or by closing it, whichever comes first; either way
// once. The row is built from the call's snapshot.
func TestAnswerEndsTheInvocationWhenTheRuntimeIsDoneWithIt(t *testing.T) {
	srv, table := dynamolocal.TemplateTableForTest(t, "AuditTable", "audit")
	client := srv.Client(context.Background())
	q := audit.NewQueue(audit.New(audit.Config{Table: table, Client: client, Fallback: io.Discard}))
	tool := MustDefine(ToolDef[struct{ Text string }, struct{ Text string }]{
		Name: "echo", ReadOnly: true,
		Handler: func(_ context.Context, call *Call, in struct{ Text string }) (struct{ Text string }, error) {
			call.SetDimension("entityId", in.Text)
			return in, nil
		},
	})
	for _, tc := range []struct {
		name    string
		atClose bool
		// ends: what ended the invocation, "eof" or "close".
		ends   string
		stream bool // an envelope asking for a streamed (NDJSON) answer
	}{
		{"under Start: at close, after the POST", true, "close", false},
		{"under Start, streamed: at close", true, "close", true},
		{"any reader: at the end of the answer", false, "eof", false},
		{"any reader, streamed: at the end of the stream", false, "eof", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := []Option{WithAuditQueue(q), WithCallVerifier(lambdatest.Verifier("echo"))}
			if tc.atClose {
				opts = append(opts, withRowsWrittenBeforeNext(q))
			}
			f := New(tool, opts...)
			var mu sync.Mutex
			var ended []string
			end := f.opts.answered
			f.opts.answered = func(id string) {
				mu.Lock()
				ended = append(ended, id)
				mu.Unlock()
				end(id)
			}
			endedNow := func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(ended) }
			id := fmt.Sprintf("req-%s-%v", tc.ends, tc.stream)
			ctx, cancel := lambdatest.Context(context.Background(), lambdatest.Invocation{RequestID: id, Timeout: 10 * time.Second})
			defer cancel()
			callID := id + "#0"
			payload := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"Text":"` + tc.ends + `"}}}`)
			if tc.stream {
				callID = "call-" + id
				args := []byte(`{"Text":"` + tc.ends + `"}`)
				payload, _ = json.Marshal(wire.Envelope{
					Version: wire.EnvelopeVersion, CallID: callID,
					Params:    wire.EnvelopeParams{Name: "echo", Arguments: args},
					MCP:       wire.EnvelopeMCP{Era: EraModern, Method: "tools/call", ProtocolVersion: "2026-07-28"},
					CallToken: lambdatest.Token("echo", "echo", callID, nil, args),
					Stream:    &wire.StreamRequest{Progress: true},
				})
			}
			r, err := f.Streaming()(ctx, payload)
			if err != nil {
				t.Fatal(err)
			}
			answer, err := io.ReadAll(r)
			if err != nil {
				t.Fatal(err)
			}
			if ndjson := bytes.HasSuffix(answer, []byte("\n")); ndjson != tc.stream {
				t.Fatalf("streamed answer %v, want %v: %s", ndjson, tc.stream, answer)
			}
			got := endedNow()
			if want := map[string]int{"eof": 1, "close": 0}[tc.ends]; len(got) != want {
				t.Fatalf("ended %v once the answer was read, want %d ends", got, want)
			}
			c, ok := r.(io.Closer)
			if !ok {
				t.Fatalf("the answer %T cannot be closed: aws-lambda-go would never say it posted it", r)
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if got := endedNow(); !slices.Equal(got, []string{id}) {
				t.Fatalf("ended %v once the answer was closed, want [%s] (once)", got, id)
			}
			if !tc.atClose && !q.Wait(id, time.Time{}) {
				t.Fatal("the row was not settled")
			}
			// Under Start, no Wait: the row is in the table once Close
			// has returned.
			it, err := client.GetItem(context.Background(), &dynamodb.GetItemInput{
				TableName: aws.String(table), ConsistentRead: aws.Bool(true),
				Key: map[string]types.AttributeValue{audit.KeyAttribute: &types.AttributeValueMemberS{Value: audit.RowKey("echo", callID)}},
			})
			if err != nil {
				t.Fatal(err)
			}
			if s, _ := it.Item["entityKey"].(*types.AttributeValueMemberS); s == nil || s.Value != "entityId#"+tc.ends {
				t.Errorf("row %v: want the dimension the handler set", it.Item)
			}
		})
	}
}
