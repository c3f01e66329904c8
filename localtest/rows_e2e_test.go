package localtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/gateway"
	"github.com/mcpfn/mcpfn/localtest"
	"github.com/mcpfn/mcpfn/localtest/internal/progress"
)

// Issue 19, defect 1: every call has exactly one outcome, the function's
// own final row when the function ran; the gateway's row (its own key,
// gateway#<callId>) is written only for a call its function did not
// answer, is never left pending, and never refuses the function's row.

// TestStreamedCallsLeaveTheFunctionsRows: 50 broadcast_digest calls with a
// progress token (answered on SSE, forwarded with InvokeWithResponseStream)
// leave 50 function final rows, each with its outcome and entity, and no
// gateway row. Before, the streamed path marked every call "may have run"
// and the gateway wrote a pending row for each, which refused the
// function's own row whenever it landed first.
func TestStreamedCallsLeaveTheFunctionsRows(t *testing.T) {
	const n, inFlight = 50, 10
	subject := unique("e2e-streamed")
	cs := connect(t, subject)
	channels := make([]string, n)
	errs := make(chan error, n)
	slots := make(chan struct{}, inFlight)
	var wg sync.WaitGroup
	for i := range n {
		channels[i] = unique("streamed")
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			params := &mcp.CallToolParams{Name: "broadcast_digest", Arguments: map[string]any{"channel": channels[i]}}
			params.SetProgressToken(fmt.Sprintf("digest-%d", i))
			res, err := cs.CallTool(t.Context(), params)
			switch {
			case err != nil:
				errs <- fmt.Errorf("call %d: %w", i, err)
			case res.IsError:
				errs <- fmt.Errorf("call %d: %s", i, text(res))
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}

	a := auditor()
	for _, ch := range channels {
		rows, err := a.EntityRows(t.Context(), "entityId", ch, audit.QueryOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1 {
			t.Errorf("channel %s: %d rows, want the function's final row", ch, len(rows))
			continue
		}
		r := rows[0]
		if audit.WriterOf(&r) != "broadcast_digest" || r.Status != audit.StatusDone || !r.OK || r.Stage == gateway.StageGateway {
			t.Errorf("channel %s: row %+v, want the function's final row, ok", ch, r)
		}
		if g, found, err := a.CallRow(t.Context(), audit.GatewayWriter, r.CallID); err != nil || found {
			t.Errorf("call %s: a gateway row %+v (%v) for a call the function answered", r.CallID, g, err)
		}
	}
	rows, err := a.CallerRows(t.Context(), localCaller(subject), audit.QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	calls := audit.JoinCalls(rows)
	if len(rows) != n || len(calls) != n {
		t.Errorf("%d rows, %d calls of %s, want %d of each", len(rows), len(calls), subject, n)
	}
	for _, c := range calls {
		if c.Gateway != nil || c.Function == nil || c.Function.Status != audit.StatusDone {
			t.Errorf("call %s: %+v, want the function's final row alone", c.CallID, c)
		}
	}
}

// faultProxy stands in front of the local Invoke API for the gateway. It
// passes every request through, except a call whose payload holds marker:
// that one it forwards, reads the function's whole answer (the function ran
// and answered), and then answers the gateway 500 ServiceException — a 5xx
// after delivery.
type faultProxy struct {
	*httptest.Server
	upstream atomic.Pointer[string]
	marker   []byte
}

func newFaultProxy(t *testing.T, marker string) *faultProxy {
	p := &faultProxy{marker: []byte(marker)}
	p.Server = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.Close)
	return p
}

func (p *faultProxy) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	fault := bytes.Contains(body, p.marker)
	ctx := r.Context()
	if fault {
		ctx = context.WithoutCancel(ctx) // the function's answer is read whole
	}
	out, err := http.NewRequestWithContext(ctx, r.Method, *p.upstream.Load()+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out.Header = r.Header.Clone()
	out.Host = r.Host // what the request was signed for
	resp, err := http.DefaultTransport.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	if fault {
		_, _ = io.Copy(io.Discard, resp.Body)
		w.Header().Set("X-Amzn-ErrorType", "ServiceException")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `{"Type":"Service","message":"injected: the function ran, the answer was lost"}`)
		return
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			w.(http.Flusher).Flush() // a streamed answer's events as they come
		}
		if err != nil {
			return
		}
	}
}

// releaseServer holds the progress fixture's hold requests (GET /<id>)
// until the caller gives up (the function's context ends) or the test ends.
type releaseServer struct {
	*httptest.Server
	mu       sync.Mutex
	released map[string]chan struct{}
}

func newReleaseServer(t *testing.T) *releaseServer {
	h := &releaseServer{released: map[string]chan struct{}{}}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-h.gate(strings.TrimPrefix(r.URL.Path, "/")):
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() {
		h.mu.Lock()
		for id, ch := range h.released {
			select {
			case <-ch:
			default:
				close(ch)
			}
			delete(h.released, id)
		}
		h.mu.Unlock()
		h.Close()
	})
	return h
}

func (h *releaseServer) gate(id string) chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch := h.released[id]
	if ch == nil {
		ch = make(chan struct{})
		h.released[id] = ch
	}
	return ch
}

// gaveUpStack is a small stack of the progress fixture whose gateway gives
// up after invokeTimeout and reaches the Invoke API through proxy, with
// pool warm emulators.
func gaveUpStack(t *testing.T, proxy *faultProxy, invokeTimeout time.Duration, pool int) *localtest.Stack {
	t.Helper()
	cfg := testConfig(t.TempDir())
	cfg.DynamoDBEndpoint = stack.DynamoDBEndpoint()
	cfg.PoolSize = pool
	cfg.Functions = []localtest.FunctionSpec{}
	cfg.ExtraFunctions = []localtest.FunctionSpec{{Name: progressFunction, Package: "./localtest/internal/progress/function", Tool: progress.Name}}
	cfg.ExtraTools = []*adapter.Tool{progress.Tool()}
	cfg.GatewayEnv = map[string]string{gateway.EnvInvokeTimeout: invokeTimeout.String(), "AWS_ENDPOINT_URL_LAMBDA": proxy.URL}
	st, err := localtest.Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	upstream := st.InvokeURL()
	proxy.upstream.Store(&upstream)
	return st
}

// gatewayError reads the {error, details: {callId}} body of an isError result.
func gatewayError(t *testing.T, res *mcp.CallToolResult) (code, callID string) {
	t.Helper()
	var body struct {
		Error   string `json:"error"`
		Details struct {
			CallID string `json:"callId"`
		} `json:"details"`
	}
	if !res.IsError || json.Unmarshal([]byte(text(res)), &body) != nil {
		return "", ""
	}
	return body.Error, body.Details.CallID
}

// TestCallsTheGatewayGaveUpOnKeepTheFunctionsRow: 50 streamed calls (a
// progress token) that outlive the gateway's invoke timeout, and 50 whose
// Invoke the gateway sees fail with a 5xx after the function answered:
// each has the function's final row with its outcome and entity — the
// call's outcome, though the function wrote it after the gateway had given
// up — and the gateway's own row, final, saying what the gateway told the
// caller and that the function may have run. Before, the gateway's pending
// row took the call's key and the function's row was refused in silence.
// A call that outlives the gateway's wait is stopped when the wait ends
// (its call token's expiry, issue 20): its handler, which honours its
// context, ends there, and the function's row says TIMEOUT at the handler.
func TestCallsTheGatewayGaveUpOnKeepTheFunctionsRow(t *testing.T) {
	const (
		n        = 50
		wave     = 10 // calls at once: each holds an execution environment
		giveUpIn = 3 * time.Second
	)
	proxy := newFaultProxy(t, "fail5xx-")
	st := gaveUpStack(t, proxy, giveUpIn, wave)
	token, err := st.MintToken(map[string]any{"sub": unique("e2e-gaveup")})
	if err != nil {
		t.Fatal(err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "gaveup-e2e", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: st.MCPURL(), HTTPClient: &http.Client{Transport: bearer{token}, Timeout: time.Minute}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	a := audit.New(audit.Config{Table: st.AuditTable(), Client: st.DynamoDB()})

	// run makes n streamed calls in waves, each wave settled (every
	// function done, its rows written) before the next: args gives a
	// call's arguments, after runs once its answer is in.
	run := func(t *testing.T, prefix string, args func(id string) map[string]any, after func(id string)) map[string]string {
		callIDs := map[string]string{} // entity id → call id
		var mu sync.Mutex
		for start := 0; start < n; start += wave {
			var wg sync.WaitGroup
			for i := start; i < min(start+wave, n); i++ {
				id := unique(prefix)
				wg.Go(func() {
					params := &mcp.CallToolParams{Name: progress.Name, Arguments: args(id)}
					params.SetProgressToken(id)
					res, err := cs.CallTool(t.Context(), params)
					if err != nil {
						t.Errorf("%s: %v", id, err)
					} else {
						_, callID := gatewayError(t, res)
						mu.Lock()
						callIDs[id] = callID
						mu.Unlock()
						if callID == "" {
							t.Errorf("%s: answered %s, want the gateway's error", id, text(res))
						}
					}
					after(id)
				})
			}
			wg.Wait()
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a safety net
			err := st.Settle(ctx)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
		}
		return callIDs
	}
	// check: each call has the function's final row (its entity; ok, or
	// failed with fnCode at the handler: the outcome) and the gateway's
	// (code, outcome unknown), none pending.
	check := func(t *testing.T, callIDs map[string]string, code, fnCode string) {
		for id, callID := range callIDs {
			rows, err := a.EntityRows(t.Context(), "entityId", id, audit.QueryOptions{})
			if err != nil {
				t.Fatal(err)
			}
			calls := audit.JoinCalls(rows)
			if err := a.CompleteCalls(t.Context(), calls); err != nil {
				t.Fatal(err)
			}
			if len(calls) != 1 {
				t.Errorf("%s: %d calls (%d rows), want one with the function's row", id, len(calls), len(rows))
				continue
			}
			c := calls[0]
			fn, gw := c.Function, c.Gateway
			switch {
			case c.CallID != callID || c.OutcomeBy != audit.OutcomeByFunction || fn == nil || gw == nil:
				t.Errorf("%s: call %+v, want call %s: the function's row its outcome, and the gateway's", id, c, callID)
			case fn.Status != audit.StatusDone || fn.OK != (fnCode == "") || fn.ErrorCode != fnCode || (fnCode != "" && fn.Stage != string(adapter.StageHandler)) ||
				fn.Dimensions["entityId"] != id || audit.WriterOf(fn) != progress.Name:
				t.Errorf("%s: the function's row %+v, want final, entity %s, error %q", id, *fn, id, fnCode)
			case gw.Status != audit.StatusDone || gw.ErrorCode != code || gw.Outcome != audit.OutcomeUnknown || gw.Stage != gateway.StageGateway || gw.AttemptID != "":
				t.Errorf("%s: the gateway's row %+v, want final, %s, outcome unknown", id, *gw, code)
			}
		}
	}

	// The 5xx calls first: the gateway's SDK client resends after a 5xx
	// from a retry quota that timeouts drain.
	t.Run("5xx after delivery", func(t *testing.T) {
		before := st.Invocations(progressFunction)
		callIDs := run(t, "fail5xx", func(id string) map[string]any { return map[string]any{"id": id} }, func(string) {})
		check(t, callIDs, string(adapter.CodeUnavailable), "")
		// The gateway's SDK resent the Invoke after the 5xx (the fixture
		// is read-only): the second execution's final row lost its
		// conditional write to the first's, and was printed, not dropped.
		log, err := os.ReadFile(st.LogPath(progressFunction))
		if err != nil {
			t.Fatal(err)
		}
		refused := 0
		for _, callID := range callIDs {
			refused += strings.Count(string(log), `"reason":"refused: `+progress.Name+`#`+callID+` already holds`)
		}
		extra := int(st.Invocations(progressFunction)-before) - n
		if refused != extra || extra == 0 {
			t.Errorf("%d refused rows printed for %d executions beyond the first of each call, want as many, and some", refused, extra)
		}
		t.Logf("%d executions beyond the first of each call, %d refused rows printed", extra, refused)
	})

	t.Run("outlive the invoke timeout", func(t *testing.T) {
		// Each function holds until its context ends, which is when the
		// gateway's wait ends (the second after its call token's exp):
		// the call certainly outlives the timeout, its handler stops at
		// that deadline, not at the function's own, and its row is late.
		holds := newReleaseServer(t)
		callIDs := run(t, "late", func(id string) map[string]any {
			return map[string]any{"id": id, "hold": holds.URL + "/" + id}
		}, func(string) {})
		for id, callID := range callIDs {
			if callID == "" {
				t.Fatalf("%s: no call id", id)
			}
		}
		check(t, callIDs, string(adapter.CodeTimeout), string(adapter.CodeTimeout))
	})
}
