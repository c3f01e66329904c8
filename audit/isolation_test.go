package audit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/internal/lambdatest"
	"github.com/mcpfn/mcpfn/internal/xraystandin"
	"github.com/mcpfn/mcpfn/wire"
)

// TestIsolationThousandConcurrentCalls drives 1,000 calls through one
// adapter.Function — one warm Lambda process's worth of concurrent work,
// with a real Auditor on DynamoDB Local and the X-Ray stand-in — where
// every call has its own caller (a signed call token with its own
// subject), trace header, entity and arguments. No row may carry another
// call's caller, entity, arguments, trace or parent, and every span must
// be the X-Ray document its row names, joined to its own parent.
func TestIsolationThousandConcurrentCalls(t *testing.T) {
	const (
		n        = 1000
		inFlight = 64 // bounded: a few seconds and little memory on 2 cores
	)
	e := newEnv(t)
	fn := newFunction(deleteTool(t, false), adapter.WithAuditor(e.auditor(t, audit.Config{AttemptTimeout: 30 * time.Second})))

	type callOf struct{ id, subject, entity, root, parent string }
	calls := make([]callOf, n)
	for i := range calls {
		calls[i] = callOf{
			id: fmt.Sprintf("iso-%04d", i), subject: fmt.Sprintf("user-%04d", i), entity: fmt.Sprintf("b-%04d", i),
			root: fmt.Sprintf("1-6a000000-%024x", i+1), parent: fmt.Sprintf("%016x", 0xa000000000000000+uint64(i)),
		}
	}
	sem := make(chan struct{}, inFlight)
	var wg sync.WaitGroup
	for _, c := range calls {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			args, _ := json.Marshal(deleteIn{ID: c.entity})
			payload, err := json.Marshal(map[string]any{
				"mcpfn": wire.EnvelopeVersion, "callId": c.id,
				"params":    map[string]any{"name": "broadcast_delete", "arguments": json.RawMessage(args)},
				"callToken": lambdatest.Token(testFunction, "broadcast_delete", c.id, &adapter.Identity{Subject: c.subject, AuthMethod: "jwt"}, args),
			})
			if err != nil {
				t.Error(err)
				return
			}
			out := invokeLambda(t, fn, payload, "Root="+c.root+";Parent="+c.parent+";Sampled=1")
			var resp wire.EnvelopeResponse
			if err := json.Unmarshal(out, &resp); err != nil || resp.CallID != c.id || resp.Error != nil {
				t.Errorf("%s answered %s", c.id, out)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	items := e.items(t)
	if len(items) != n {
		t.Fatalf("%d rows, want %d", len(items), n)
	}
	byID := map[string]callOf{}
	for _, c := range calls {
		byID[c.id] = c
	}
	spans := map[string]callOf{} // span id → the call whose row names it
	crossed := 0
	for _, it := range items {
		c, ok := byID[str(it, "callId")]
		if !ok {
			t.Fatalf("a row of no call: %v", it)
		}
		want := map[string]string{
			"callerSubject": c.subject, "entityKey": "entityId#" + c.entity, "argsPreview": `{"id":"` + c.entity + `"}`,
			"traceId": c.root, "parentSpanId": c.parent, "status": audit.StatusDone,
		}
		for attr, v := range want {
			if got := str(it, attr); got != v {
				crossed++
				t.Errorf("%s: %s = %q, want %q", c.id, attr, got, v)
			}
		}
		span := str(it, "spanId")
		if prev, dup := spans[span]; dup || span == "" {
			t.Errorf("%s: span %q (also %s's)", c.id, span, prev.id)
		}
		spans[span] = c
	}
	if crossed > 0 {
		t.Fatalf("%d cross-stamped attributes", crossed)
	}

	// The stand-in receives over UDP, a real socket (no synctest bubble can
	// wait on it): WaitFor wakes on each datagram until every span has
	// arrived. The timeout is a safety net for lost datagrams, not a timing
	// assertion.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	joined := map[string]bool{}
	_, err := e.daemon.WaitFor(ctx, func(d xraystandin.Document) bool {
		if c, ok := spans[d.ID]; ok && !joined[d.ID] {
			if d.TraceID != c.root || d.ParentID != c.parent || d.Type != "subsegment" || d.Name != "broadcast_delete" {
				t.Errorf("%s: span %+v, want trace %s parent %s", c.id, d, c.root, c.parent)
			}
			joined[d.ID] = true
		}
		return len(joined) == n
	})
	if err != nil {
		t.Fatalf("%d of %d spans arrived joined to their parents: %v", len(joined), n, err)
	}
}
