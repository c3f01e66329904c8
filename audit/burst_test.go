package audit_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpfn/mcpfn/audit"
)

// sharedServer answers PutItem in process as a table whose capacity the
// requests in flight share (processor sharing, as DynamoDB Local's JVM on
// a busy machine): alone a request takes work; n at once take n×work each,
// and finish together. A request whose client gave up keeps its share until
// it is done, as a server that never notices an abandoned request. No
// socket: a synctest bubble runs it, and the auditor around it, on its
// fake clock, so the burst is the same burst on every run.
type sharedServer struct {
	work time.Duration
	mu   sync.Mutex
	// left is the service each request in flight still needs.
	left map[chan struct{}]time.Duration
	// clients is the number of requests whose client is still waiting.
	clients, maxClients int
	puts, answered      atomic.Int64
}

// tick is the server's time slice: each tick, every request in flight gets
// tick/n of service.
const tick = time.Millisecond

// serve runs the server until ctx ends; start it in the bubble.
func (s *sharedServer) serve(ctx context.Context) {
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.mu.Lock()
		if n := len(s.left); n > 0 {
			share := tick / time.Duration(n)
			for done, left := range s.left {
				if left -= share; left > 0 {
					s.left[done] = left
					continue
				}
				delete(s.left, done)
				close(done)
			}
		}
		s.mu.Unlock()
	}
}

func (s *sharedServer) RoundTrip(r *http.Request) (*http.Response, error) {
	if err := drainPut(r); err != nil {
		return nil, err
	}
	s.puts.Add(1)
	done := make(chan struct{})
	s.mu.Lock()
	s.left[done] = s.work
	s.clients++
	s.maxClients = max(s.maxClients, s.clients)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.clients--
		s.mu.Unlock()
	}()
	select {
	case <-done:
	case <-r.Context().Done():
		return nil, r.Context().Err()
	}
	s.answered.Add(1)
	return dynamoAnswer(r, http.StatusOK, "{}"), nil
}

// TestBurstOfRowsIsWrittenNotTimedOut (issue 21): 200 rows recorded at
// once — a long-lived gateway refusing a burst of task starts — against a
// table that needs 20 ms per write and shares itself among the writes in
// flight. Sent all at once, every write would take 200×20 ms = 4 s and
// outlive its 2 s attempt, every retry likewise, and the rows would end as
// fallback lines. The Auditor keeps at most MaxInFlight requests in flight
// (each then takes MaxInFlight×20 ms), the others wait for a writer, and a
// row's budget starts when its write does: every row is written, none
// falls back, and no more requests than the bound were ever in flight.
func TestBurstOfRowsIsWrittenNotTimedOut(t *testing.T) {
	const n, work = 200, 20 * time.Millisecond
	srv := &sharedServer{work: work, left: map[chan struct{}]time.Duration{}}
	var fb bytes.Buffer
	var a *audit.Auditor
	synctest.Test(t, func(t *testing.T) {
		ctx, stop := context.WithCancel(context.Background())
		go srv.serve(ctx)
		// Made in the bubble: its writers' slots are the bubble's.
		a = audit.New(audit.Config{Table: "AuditTable", Client: inProcessClient(srv), Fallback: &fb})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				row := baseRow(fmt.Sprintf("call-burst-%03d", i))
				row.Sampled = "0"
				// No deadline: the gateway in a long-lived process.
				a.Record(context.Background(), row)
			})
		}
		wg.Wait()
		stop()
	})
	st := a.Stats()
	if st.Written != n || st.Fallbacks != 0 || fb.Len() != 0 {
		t.Errorf("stats %+v: want %d rows written, none fallen back; fallback:\n%.2000s", st, n, fb.String())
	}
	if srv.maxClients > audit.DefaultMaxInFlight {
		t.Errorf("%d writes in flight at once, want at most %d", srv.maxClients, audit.DefaultMaxInFlight)
	}
	if st.Attempts != srv.puts.Load() {
		t.Errorf("stats %+v, %d puts reached the table", st, srv.puts.Load())
	}
}

// TestRowWaitingForAWriterKeepsTheReserve: a row that waits for a writer
// while the table holds every one of them still ends before its
// invocation's deadline less the reserve, printed as a fallback line that
// says why; the writers' own rows are written once the table answers.
func TestRowWaitingForAWriterKeepsTheReserve(t *testing.T) {
	h := &heldPuts{}
	var fb bytes.Buffer
	synctest.Test(t, func(t *testing.T) {
		h.release = make(chan struct{})
		a := audit.New(audit.Config{Table: "AuditTable", Client: inProcessClient(h), Fallback: &fb, MaxInFlight: 2})
		var wg sync.WaitGroup
		for i := range 2 {
			wg.Go(func() { a.Record(context.Background(), baseRow(fmt.Sprintf("call-holding-%d", i))) })
		}
		synctest.Wait() // both writers are in the table
		const deadline, reserve = 800 * time.Millisecond, 100 * time.Millisecond
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		start := time.Now()
		a.Record(ctx, baseRow("call-waiting"))
		if took := time.Since(start); took != deadline-reserve {
			t.Errorf("the waiting row ended after %v, want the deadline less the reserve, %v", took, deadline-reserve)
		}
		if h.puts.Load() != 2 {
			t.Errorf("%d puts: the waiting row reached the table", h.puts.Load())
		}
		close(h.release)
		wg.Wait()
		if st := a.Stats(); st.Written != 2 || st.Fallbacks != 1 {
			t.Errorf("stats %+v", st)
		}
	})
	if !strings.Contains(fb.String(), `"callId":"call-waiting"`) || !strings.Contains(fb.String(), "writer") {
		t.Errorf("fallback: %s", fb.String())
	}
}

// TestBurstAgainstDynamoDBLocalStaysWithinTheBound: the same burst against
// DynamoDB Local, through a proxy that counts the requests in flight:
// every row is in the table, and the Auditor never had more than
// MaxInFlight requests out at once. The test is about the bound, not the
// time: its attempts and budget are generous, so that on a starved machine
// (a run at load 16–20, DynamoDB Local getting a sliver of a core) an
// attempt that DynamoDB Local answers after the default 2 s does not turn
// into a fallback line for a row that landed all the same.
func TestBurstAgainstDynamoDBLocalStaysWithinTheBound(t *testing.T) {
	e := newEnv(t)
	u, err := url.Parse(e.server.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	var mu sync.Mutex
	var inFlight, most int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		mu.Unlock()
		defer func() {
			mu.Lock()
			inFlight--
			mu.Unlock()
		}()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	proxy := srv.URL
	var fb bytes.Buffer
	a := e.auditor(t, audit.Config{Client: clientFor(proxy), Fallback: &fb, AttemptTimeout: time.Minute, Budget: 10 * time.Minute})
	const n = 200
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { a.Record(context.Background(), baseRow(fmt.Sprintf("call-local-burst-%03d", i))) })
	}
	wg.Wait()
	if got := len(e.items(t)); got != n || fb.Len() != 0 {
		t.Fatalf("%d rows of %d in the table; fallback:\n%.2000s", got, n, fb.String())
	}
	if most > audit.DefaultMaxInFlight {
		t.Errorf("%d requests in flight at once, want at most %d", most, audit.DefaultMaxInFlight)
	}
}
