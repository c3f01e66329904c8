package adapter_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/calltoken"
	"github.com/mcpfn/mcpfn/internal/lambdatest"
	"github.com/mcpfn/mcpfn/wire"
)

// hangingCredentials is a credential provider that never answers until
// released, whatever its context says.
type hangingCredentials struct{ release <-chan struct{} }

func (h hangingCredentials) Resolve(context.Context, *adapter.Call, adapter.CredentialNeed) (*adapter.Credential, error) {
	<-h.release
	return &adapter.Credential{}, nil
}

// TestEveryStepRunsUnderTheCallsDeadline: a hook (or credential provider)
// that hangs, ignoring its context, still ends the call at the call's
// deadline (the Lambda deadline less the reserve) with TIMEOUT at that
// hook's stage and exactly one AfterToolCall, so the final audit row is
// written before Lambda's deadline. Time is synctest's, so "at the deadline"
// is exact.
func TestEveryStepRunsUnderTheCallsDeadline(t *testing.T) {
	const lambdaTimeout, reserve = 10 * time.Second, 500 * time.Millisecond
	cases := []struct {
		stage adapter.Stage
		hang  func(release <-chan struct{}) []adapter.Option
	}{
		{adapter.StageBeforeToolCall, func(r <-chan struct{}) []adapter.Option {
			return []adapter.Option{adapter.WithHooks(adapter.Hooks{BeforeToolCall: func(context.Context, *adapter.Call, json.RawMessage) (json.RawMessage, error) {
				<-r
				return nil, nil
			}})}
		}},
		{adapter.StageBeforeHandle, func(r <-chan struct{}) []adapter.Option {
			return []adapter.Option{adapter.WithHooks(adapter.Hooks{BeforeHandle: func(context.Context, *adapter.Call) error {
				<-r
				return nil
			}})}
		}},
		{adapter.StageBeforeHandle, func(r <-chan struct{}) []adapter.Option {
			return []adapter.Option{adapter.WithCredentials(hangingCredentials{r})}
		}},
		{adapter.StageAfterHandle, func(r <-chan struct{}) []adapter.Option {
			return []adapter.Option{adapter.WithHooks(adapter.Hooks{AfterHandle: func(context.Context, *adapter.Call, any) (any, error) {
				<-r
				return nil, nil
			}})}
		}},
	}
	for i, tc := range cases {
		t.Run(string(tc.stage)+"/"+string(rune('a'+i)), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				defer close(release)
				rec := newRecorder()
				tool := widgetTool(t, func(d *adapter.ToolDef[widgetIn, widgetOut]) {
					d.Credentials = []adapter.CredentialNeed{{Name: "api", Kind: "api-key"}}
				})
				opts := append([]adapter.Option{adapter.WithHooks(rec.hooks()), adapter.WithReserve(reserve), quietLogger(),
					adapter.WithCredentials(hangingCredentials{closedChan()})}, tc.hang(release)...)
				fn := newFunction(tool, opts...)
				start := time.Now()
				raw := invoke(t, fn, envelopeOf(t, "c-hang", "widget_update", map[string]any{"entityId": "w"}, nil),
					lambdaInvoke{Timeout: lambdaTimeout})
				if took := time.Since(start); took != lambdaTimeout-reserve {
					t.Errorf("the call ended after %v, want the call's deadline %v", took, lambdaTimeout-reserve)
				}
				res, rpcErr := envelopeResult(t, raw)
				if rpcErr != nil {
					t.Fatalf("protocol error %+v", rpcErr)
				}
				if body := res.errorBody(t); body.Error != string(adapter.CodeTimeout) {
					t.Fatalf("answer %+v", body)
				}
				got := rec.only(t)
				if got.Stage != tc.stage || adapter.CodeOf(got.Err) != adapter.CodeTimeout {
					t.Fatalf("AfterToolCall saw stage %s, %v; want %s, TIMEOUT", got.Stage, got.Err, tc.stage)
				}
			})
		})
	}
}

func closedChan() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// TestDestructiveHandlerPastItsDeadlineIsOutcomeUnknown: a destructive,
// non-idempotent handler still running at the call's deadline may yet take
// effect, so the caller is told so (TIMEOUT, not retryable, a hint), as the
// gateway tells it when it loses a destructive call; AfterToolCall gets an
// Unfinished that reports the handler's late end.
func TestDestructiveHandlerPastItsDeadlineIsOutcomeUnknown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var once sync.Once
		free := func() { once.Do(func() { close(release) }) }
		defer free() // a failed check must not leave the bubble blocked
		var outcome *adapter.Outcome
		tool := widgetTool(t, func(d *adapter.ToolDef[widgetIn, widgetOut]) {
			d.Destructive, d.Idempotent = true, false
			d.Handler = func(_ context.Context, _ *adapter.Call, in widgetIn) (widgetOut, error) {
				<-release // ignores its context, as a blocking client library would
				return widgetOut{EntityID: in.EntityID}, nil
			}
		})
		fn := newFunction(tool, quietLogger(), adapter.WithHooks(adapter.Hooks{
			AfterToolCall: func(_ context.Context, _ *adapter.Call, out *adapter.Outcome) { outcome = out },
		}))
		raw := invoke(t, fn, envelopeOf(t, "c-late", "widget_update", map[string]any{"entityId": "w"}, nil),
			lambdaInvoke{Timeout: 5 * time.Second})
		res, _ := envelopeResult(t, raw)
		body := res.errorBody(t)
		if body.Error != string(adapter.CodeTimeout) || body.Retryable || !strings.Contains(body.Hint, "may have taken effect") {
			t.Fatalf("answer %+v", body)
		}
		if outcome == nil || outcome.Stage != adapter.StageHandler || outcome.Unfinished == nil {
			t.Fatalf("outcome %+v", outcome)
		}
		select {
		case <-outcome.Unfinished.Done():
			t.Fatal("Done before the handler returned")
		default:
		}
		time.Sleep(time.Minute) // synctest time: the handler finishes a minute later
		free()
		<-outcome.Unfinished.Done()
		if outcome.Unfinished.Err() != nil {
			t.Errorf("late error %v", outcome.Unfinished.Err())
		}
		if at := outcome.Unfinished.FinishedAt(); at.IsZero() || time.Since(at) != 0 {
			t.Errorf("finished at %v, now %v", at, time.Now())
		}
	})
}

// TestIdempotentDestructiveTimeoutStaysRetryable: the gateway's rule, the
// same here: only a destructive tool that is not idempotent loses the
// retryable flag on a timeout.
func TestIdempotentDestructiveTimeoutStaysRetryable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tool := widgetTool(t, func(d *adapter.ToolDef[widgetIn, widgetOut]) { d.Destructive, d.Idempotent = true, true })
		fn := newFunction(tool, quietLogger())
		raw := invoke(t, fn, envelopeOf(t, "c-idem", "widget_update", map[string]any{"entityId": "w", "sleepMs": 60000}, nil),
			lambdaInvoke{Timeout: 5 * time.Second})
		res, _ := envelopeResult(t, raw)
		if body := res.errorBody(t); body.Error != string(adapter.CodeTimeout) || !body.Retryable {
			t.Fatalf("answer %+v", body)
		}
	})
}

// envelopeExpiring is envelopeOf with a token that expires at expires —
// the deadline the gateway gives its wait for the answer — and names task
// (a task run) when set.
func envelopeExpiring(t testing.TB, callID, task string, expires time.Time) []byte {
	t.Helper()
	args := mustJSON(t, map[string]any{"entityId": "w", "sleepMs": 600000})
	tok, err := lambdatest.Signer(map[string]string{"widget_update": testFunction}).Sign(calltoken.Call{
		Tool: "widget_update", CallID: callID, Args: args, Expires: expires, Task: task})
	if err != nil {
		t.Fatal(err)
	}
	env := wire.Envelope{Version: wire.EnvelopeVersion, CallID: callID, CallToken: tok,
		Params: wire.EnvelopeParams{Name: "widget_update", Arguments: args},
		MCP:    wire.EnvelopeMCP{Era: adapter.EraModern, Method: "tools/call", ProtocolVersion: "2026-07-28"}}
	if task != "" {
		env.Task = &wire.TaskRun{ID: task}
	}
	return mustJSON(t, env)
}

// TestSynchronousHandlerStopsAtItsTokensExpiry (issue 20, M2): the gateway
// stops waiting for a forwarded call at its token's expiry; a handler still
// running then (here one that would sleep ten minutes, in a function whose
// timeout is fifteen) has its context ended right there, and the call ends
// TIMEOUT at the handler stage — not at the function's own deadline. The
// token says the deadline in whole seconds, truncated: the handler stops
// within the second after it (here the gateway waits 25.5 s, the token
// says 25 s, the handler stops at 26 s).
func TestSynchronousHandlerStopsAtItsTokensExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder()
		fn := newFunction(widgetTool(t), quietLogger(), adapter.WithHooks(rec.hooks()))
		start := time.Now() // synctest's epoch: a whole second
		raw := invoke(t, fn, envelopeExpiring(t, "c-waited", "", start.Add(25500*time.Millisecond)), lambdaInvoke{Timeout: 15 * time.Minute})
		if took := time.Since(start); took != 26*time.Second {
			t.Errorf("the handler ran %v, want the second after the gateway's 25.5 s wait", took)
		}
		res, rpcErr := envelopeResult(t, raw)
		if rpcErr != nil {
			t.Fatalf("protocol error %+v", rpcErr)
		}
		if body := res.errorBody(t); body.Error != string(adapter.CodeTimeout) {
			t.Fatalf("answer %+v", body)
		}
		if got := rec.only(t); got.Stage != adapter.StageHandler {
			t.Fatalf("ended at stage %s", got.Stage)
		}
	})
}

// TestOnlyTheGatewaysWaitEndsAHandler: an AgentCore call's token lives a
// minute whatever the AgentCore Gateway waits, so its expiry does not end
// the handler; the function's own deadline does.
func TestOnlyTheGatewaysWaitEndsAHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fn := newFunction(widgetTool(t), quietLogger())
		args := `{"entityId":"w","sleepMs":90000}`
		tok := lambdatest.InterceptorToken(testFunction, "widget_update", "", nil, []byte(args), time.Now().Add(time.Minute))
		start := time.Now()
		res := agentCoreResult(t, invoke(t, fn, withToken(args, tok), lambdaInvoke{Custom: agentCoreContext("widgets___widget_update"), Timeout: 5 * time.Minute}))
		if took := time.Since(start); took != 90*time.Second || res.IsError {
			t.Fatalf("an AgentCore call ran %v: %+v", took, res)
		}
	})
}
