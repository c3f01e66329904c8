package audit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/internal/lambdatest"
)

// typicalArgs is a ~1 KB tool argument object: a few scalars, a nested
// object with a secret, a short list.
var typicalArgs = func() json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		"channel": "ops-announcements",
		"text":    strings.Repeat("Deploy window moves to 14:00 UTC. ", 16),
		"options": map[string]any{"notify": true, "priority": 3, "apiKey": "sk-live-0123456789", "tags": []string{"deploy", "ops", "weekly"}},
		"recipients": []map[string]any{
			{"id": "u-1", "name": "Ada"}, {"id": "u-2", "name": "Grace"}, {"id": "u-3", "name": "Barbara"},
		},
		"requestId": "6f1c2b9e-54d1-4c0e-9a7b-1f2e3d4c5b6a",
	})
	return b
}()

// go test -run '^$' -bench . -benchmem ./audit/
func BenchmarkSanitizeArgs1KB(b *testing.B) {
	b.SetBytes(int64(len(typicalArgs)))
	b.ReportAllocs()
	for b.Loop() {
		audit.SanitizeArgs(typicalArgs)
	}
}

func BenchmarkSanitizeArgs1MB(b *testing.B) {
	big := json.RawMessage(`{"blob":"` + strings.Repeat("x", 1<<20) + `"}`)
	b.ReportAllocs()
	for b.Loop() {
		audit.SanitizeArgs(big)
	}
}

// warm sends a few hundred rows first: DynamoDB Local runs on the JVM, and
// until its JIT has compiled the PutItem path the first runs measure that.
func warm(a *audit.Auditor) {
	for i := range 300 {
		row := baseRow(fmt.Sprintf("warm-%d", i))
		row.Arguments = typicalArgs
		a.Record(context.Background(), row)
	}
}

// BenchmarkRecord is one final row: sanitize, marshal, one conditional
// PutItem to DynamoDB Local over loopback HTTP (no span).
func BenchmarkRecord(b *testing.B) {
	e := newEnv(b)
	a := audit.New(audit.Config{Table: e.table, Client: e.client, Fallback: io.Discard})
	ctx := context.Background()
	warm(a)
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		i++
		row := baseRow(fmt.Sprintf("bench-%d", i))
		row.Arguments = typicalArgs
		a.Record(ctx, row)
	}
	if st := a.Stats(); st.Fallbacks != 0 || st.Retries != 0 {
		b.Fatalf("stats %+v", st)
	}
}

// BenchmarkRecordWithSpan adds the X-Ray subsegment (one UDP datagram to
// the daemon stand-in).
func BenchmarkRecordWithSpan(b *testing.B) {
	e := newEnv(b)
	a := e.auditor(b, audit.Config{Fallback: io.Discard})
	ctx := context.Background()
	warm(a)
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		i++
		row := baseRow(fmt.Sprintf("bench-%d", i))
		row.Arguments = typicalArgs
		a.Record(ctx, row)
	}
}

// BenchmarkRecordParallel measures throughput with concurrent calls, as on
// Lambda Managed Instances.
func BenchmarkRecordParallel(b *testing.B) {
	e := newEnv(b)
	a := audit.New(audit.Config{Table: e.table, Client: e.client, Fallback: io.Discard})
	ctx := context.Background()
	warm(a)
	var n atomicCounter
	b.ReportAllocs()
	b.ResetTimer() // RunParallel does not exclude the warm-up the way b.Loop does
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			row := baseRow(fmt.Sprintf("bench-p-%d", n.next()))
			row.Arguments = typicalArgs
			a.Record(ctx, row)
		}
	})
}

type atomicCounter struct{ v atomic.Int64 }

func (c *atomicCounter) next() int64 { return c.v.Add(1) }

// BenchmarkFallbackLine is a call whose table is unreachable (connection
// refused on loopback, one attempt): the refused connect plus the JSON line.
func BenchmarkFallbackLine(b *testing.B) {
	a := audit.New(audit.Config{Table: "t", Client: clientFor("http://" + closedPort(b)), Fallback: io.Discard, MaxAttempts: 1})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		row := baseRow("bench-fallback")
		row.Arguments = typicalArgs
		a.Record(ctx, row)
	}
}

// BenchmarkAdapterAuditOff and BenchmarkAdapterAuditOn are the same call of a
// tool through the adapter's Lambda entry point, without and with the audit
// (one conditional PutItem to DynamoDB Local and one X-Ray document per
// call): what turning the audit on costs a call.
func BenchmarkAdapterAuditOff(b *testing.B) { benchAdapter(b, false) }

func BenchmarkAdapterAuditOn(b *testing.B) { benchAdapter(b, true) }

func benchAdapter(b *testing.B, audited bool) {
	var opts []adapter.Option
	if audited {
		e := newEnv(b)
		opts = append(opts, adapter.WithAuditor(e.auditor(b, audit.Config{})))
	}
	fn := lambda.NewHandler(newFunction(deleteTool(b, false), opts...))
	var n atomic.Int64
	b.ReportAllocs()
	for b.Loop() {
		// A fresh call id per call: a repeated one would be a retry,
		// which the audit answers without a second row.
		payload := envelope(b, fmt.Sprintf("bench-%d", n.Add(1)), deleteIn{ID: "b-1"})
		ctx, cancel := lambdatest.Context(context.Background(), lambdatest.Invocation{
			RequestID: "bench", Timeout: 10 * time.Second,
			Trace: "Root=" + lambdaRoot + ";Parent=" + lambdaParent + ";Sampled=1",
		})
		if _, err := fn.Invoke(ctx, payload); err != nil {
			b.Fatal(err)
		}
		cancel()
	}
}

// BenchmarkAfterResponse is one call through the entry point Start hands
// aws-lambda-go (Function.Streaming), the answer read to its end as the
// runtime reads it, with the audit off and with it on in the after-response
// mode (WithAuditQueue: the row queued, written to DynamoDB Local with its
// X-Ray document once the answer is out). caller-p50-ns is the caller's
// path only (the handler called until the answer's last byte is read; the
// reader is closed after, as aws-lambda-go closes it once it has posted
// it); the row's write is waited for after it, untimed, as the extension
// holds the invocation open. Profile the caller's path with
//
//	go test -run '^$' -bench AfterResponse -cpuprofile cpu.out ./audit/
//	go tool pprof -top -cum -focus 'Function\).InvokeStream$' audit.test cpu.out
func BenchmarkAfterResponse(b *testing.B) {
	for _, audited := range []bool{false, true} {
		name := "off"
		if audited {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			var q *audit.Queue
			var opts []adapter.Option
			if audited {
				e := newEnv(b)
				a := e.auditor(b, audit.Config{})
				warm(a)
				q = audit.NewQueue(a)
				opts = append(opts, adapter.WithAuditQueue(q))
			}
			handler := newFunction(deleteTool(b, false), opts...).Streaming()
			var n int
			var caller []time.Duration
			b.ReportAllocs()
			for b.Loop() {
				n++
				id := fmt.Sprintf("bench-%d-%d", time.Now().UnixNano(), n)
				payload := envelope(b, id, deleteIn{ID: "b-1"})
				ctx, cancel := lambdatest.Context(context.Background(), lambdatest.Invocation{
					RequestID: id, Timeout: 10 * time.Second,
					Trace: "Root=" + lambdaRoot + ";Parent=" + lambdaParent + ";Sampled=1",
				})
				began := time.Now()
				r, err := handler(ctx, payload)
				if err == nil {
					_, err = io.Copy(io.Discard, r)
				}
				caller = append(caller, time.Since(began))
				if err != nil {
					b.Fatal(err)
				}
				if c, ok := r.(io.Closer); ok {
					c.Close() // as aws-lambda-go does once it has posted the answer
				}
				if q != nil {
					b.StopTimer()
					if !q.Wait(id, time.Time{}) {
						b.Fatal("the row was not settled")
					}
					b.StartTimer()
				}
				cancel()
			}
			slices.Sort(caller)
			b.ReportMetric(float64(caller[len(caller)/2].Nanoseconds()), "caller-p50-ns")
			if q != nil {
				if st := q.Auditor().Stats(); st.Fallbacks != 0 {
					b.Fatalf("stats %+v", st)
				}
			}
		})
	}
}
