package audit_test

import (
	"bytes"
	"context"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpfn/mcpfn/audit"
)

// writersSeen serves PutItems in process and notes which goroutine sent
// each; a put for a call id in hold waits until hold is closed.
type writersSeen struct {
	mu      sync.Mutex
	by      map[string]string // call id → goroutine
	hold    string
	release chan struct{}
}

func (w *writersSeen) RoundTrip(r *http.Request) (*http.Response, error) {
	var body bytes.Buffer
	_, _ = body.ReadFrom(r.Body)
	_ = r.Body.Close()
	buf := make([]byte, 64)
	g := strings.Fields(string(buf[:runtime.Stack(buf, false)]))[1] // "goroutine N [running]:"
	call := ""
	for _, id := range []string{"call-k1", "call-k2", "call-k3", "call-k4", "call-held", "call-free"} {
		if strings.Contains(body.String(), `"`+id+`"`) {
			call = id
		}
	}
	w.mu.Lock()
	w.by[call] = g
	w.mu.Unlock()
	if call == w.hold {
		select {
		case <-w.release:
		case <-r.Context().Done():
			return nil, r.Context().Err()
		}
	}
	return dynamoAnswer(r, http.StatusOK, "{}"), nil
}

func (w *writersSeen) writer(call string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.by[call]
}

// TestKeptWriterWritesOneInvocationAfterAnother: with KeepWriters (as a
// Lambda function's after-response audit runs) the rows of invocations that
// come one after another are written by the same goroutine, whose stack the
// SDK has already grown; a writer idle past its limit ends, and the next
// row gets a new one; a row whose write hangs does not hold up the next
// invocation's, which gets a writer of its own.
func TestKeptWriterWritesOneInvocationAfterAnother(t *testing.T) {
	e := newEnv(t)
	w := &writersSeen{by: map[string]string{}}
	var fb syncBuffer
	a := e.auditor(t, audit.Config{Client: inProcessClient(w), Fallback: &fb})
	synctest.Test(t, func(t *testing.T) {
		w.release = make(chan struct{})
		w.hold = "call-held"
		q := audit.NewQueue(a).KeepWriters(time.Minute)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		invoke := func(req, call string) {
			q.Enqueue(ctx, req, baseRow(call))
			q.End(req)
		}
		for i, call := range []string{"call-k1", "call-k2", "call-k3"} {
			req := "req-k" + string(rune('1'+i))
			invoke(req, call)
			if !q.Wait(req, time.Time{}) {
				t.Fatalf("%s not settled", req)
			}
			time.Sleep(30 * time.Second) // idle, but less than the writer's limit
		}
		if a, b, c := w.writer("call-k1"), w.writer("call-k2"), w.writer("call-k3"); a == "" || a != b || b != c {
			t.Errorf("rows written by goroutines %q %q %q, want one writer for all three", a, b, c)
		}
		time.Sleep(2 * time.Minute) // past the limit: the writer ends
		synctest.Wait()
		invoke("req-k4", "call-k4")
		if !q.Wait("req-k4", time.Time{}) {
			t.Fatal("req-k4 not settled")
		}
		if w.writer("call-k4") == w.writer("call-k3") {
			t.Errorf("a writer idle for 2 min wrote the next row (goroutine %s): it should have ended", w.writer("call-k4"))
		}
		// A write that hangs: the next invocation's row is not behind it.
		invoke("req-held", "call-held")
		synctest.Wait()
		invoke("req-free", "call-free")
		if !q.Wait("req-free", time.Time{}) {
			t.Fatal("req-free not settled")
		}
		if w.writer("call-free") == w.writer("call-held") {
			t.Error("the held row's writer wrote the next row")
		}
		close(w.release)
		if !q.Wait("req-held", time.Time{}) {
			t.Fatal("req-held not settled")
		}
		time.Sleep(2 * time.Minute) // every writer ends: the bubble can close
	})
	if fb.String() != "" {
		t.Errorf("fallback: %s", fb.String())
	}
}
