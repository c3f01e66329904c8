package adapter_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/calltoken"
	"github.com/mcpfn/mcpfn/internal/lambdatest"
)

// rows is an audit Recorder that keeps the rows the adapter writes; like
// the audit table, a second write-ahead row for a call id finds the first.
type rows struct {
	mu      sync.Mutex
	pending []*audit.Row
	final   []*audit.Row
}

func (r *rows) Pending(_ context.Context, row *audit.Row) (*audit.Row, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.pending {
		if p.CallID == row.CallID {
			r.pending = append(r.pending, row)
			return p, nil
		}
	}
	r.pending = append(r.pending, row)
	return nil, nil
}

func (r *rows) Late(context.Context, *audit.Row) {}

func (r *rows) Record(_ context.Context, row *audit.Row) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.final = append(r.final, row)
}

func (r *rows) last(t *testing.T) *audit.Row {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.final) == 0 {
		t.Fatal("no audit row")
	}
	return r.final[len(r.final)-1]
}

// scopedWidget is widget_update requiring widgets:write.
func scopedWidget(d *adapter.ToolDef[widgetIn, widgetOut]) { d.Scopes = []string{"widgets:write"} }

// withToken is an AgentCore payload: args plus the interceptor's _mcpfn.
func withToken(args, token string) []byte {
	return []byte(strings.TrimSuffix(args, "}") + `,"_mcpfn":{"callToken":"` + token + `"}}`)
}

func agentCoreResult(t *testing.T, raw []byte) callResult {
	t.Helper()
	var res callResult
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("not a CallToolResult: %s", raw)
	}
	return res
}

// The interceptor's token, carried in the reserved _mcpfn argument, gives an
// AgentCore call its verified caller and call id; _mcpfn is gone before the
// schema (additionalProperties: false) and the handler see the arguments.
func TestAgentCoreCallTokenCarriesTheVerifiedCaller(t *testing.T) {
	rec, audited := newRecorder(), &rows{}
	fn := newFunction(widgetTool(t, scopedWidget), adapter.WithHooks(rec.hooks()), adapter.WithAuditor(audited))
	tok := lambdatest.InterceptorToken(testFunction, "widget_update", "ic-1", alice, []byte(widgetArgs), time.Now().Add(time.Minute))
	res := agentCoreResult(t, invoke(t, fn, withToken(widgetArgs, tok), lambdaInvoke{Custom: agentCoreContext("widgets___widget_update")}))
	if res.IsError || string(res.StructuredContent) != `{"entityId":"w-1","caller":"alice"}` {
		t.Fatalf("result = %+v (%s)", res, res.StructuredContent)
	}
	got := rec.only(t)
	if got.CallID != "ic-1" || got.Caller == nil || got.Caller.Subject != "alice" {
		t.Fatalf("call id %q caller %+v", got.CallID, got.Caller)
	}
	if strings.Contains(got.Arguments, "_mcpfn") {
		t.Fatalf("the handler's arguments still carry the token: %s", got.Arguments)
	}
	row := audited.last(t)
	if row.CallerSubject != "alice" || strings.Contains(string(row.Arguments), "_mcpfn") || strings.Contains(string(row.Arguments), tok) {
		t.Fatalf("row caller %q arguments %s", row.CallerSubject, row.Arguments)
	}
}

// Without _mcpfn an AgentCore call has no identity: a tool with scopes
// refuses it, and its row names no caller.
func TestAgentCoreCallWithoutTokenIsAnonymous(t *testing.T) {
	rec, audited := newRecorder(), &rows{}
	fn := newFunction(widgetTool(t, scopedWidget), adapter.WithHooks(rec.hooks()), adapter.WithAuditor(audited))
	res := agentCoreResult(t, invoke(t, fn, []byte(widgetArgs), lambdaInvoke{Custom: agentCoreContext("widgets___widget_update")}))
	if b := res.errorBody(t); b.Error != "UNAUTHORIZED" {
		t.Fatalf("answer = %+v", b)
	}
	if got := rec.only(t); got.Caller != nil {
		t.Fatalf("caller = %+v", got.Caller)
	}
	if row := audited.last(t); row.CallerSubject != "" || row.UnverifiedCaller != "" {
		t.Fatalf("row names a caller: %q / %q", row.CallerSubject, row.UnverifiedCaller)
	}
}

// A token that does not verify for this function, this tool and these
// arguments is refused with its reason; the handler never runs.
func TestAgentCoreBadCallTokensAreRefused(t *testing.T) {
	in := time.Now().Add(time.Minute)
	forgedKey := calltoken.NewSigner(calltoken.SignerInterceptor)
	forgedKey.Add("widget_update", testFunction, lambdatest.Keyring("someone-else"), nil)
	forged, err := forgedKey.Sign(calltoken.Call{Tool: "widget_update", CallID: "ic-1", Caller: alice, Args: []byte(widgetArgs), Expires: in})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, token string
		reason      calltoken.Reason
	}{
		{"forged", forged, calltoken.ReasonUnknownKey},
		{"expired", lambdatest.InterceptorToken(testFunction, "widget_update", "ic-1", alice, []byte(widgetArgs), time.Now().Add(-time.Minute)), calltoken.ReasonExpired},
		{"other tool", lambdatest.InterceptorToken(testFunction, "widget_delete", "ic-1", alice, []byte(widgetArgs), in), calltoken.ReasonTool},
		{"other arguments", lambdatest.InterceptorToken(testFunction, "widget_update", "ic-1", alice, []byte(`{"entityId":"w-2"}`), in), calltoken.ReasonArguments},
		{"junk", "not-a-token", calltoken.ReasonMalformed},
		// The gateway's token for the same call: each format has its signer.
		{"signed by the gateway", tokenFor(testFunction, "widget_update", "ic-1", alice, widgetArgs, in), calltoken.ReasonSigner},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec, audited := newRecorder(), &rows{}
			fn := newFunction(widgetTool(t, scopedWidget), adapter.WithHooks(rec.hooks()), adapter.WithAuditor(audited))
			res := agentCoreResult(t, invoke(t, fn, withToken(widgetArgs, tc.token), lambdaInvoke{Custom: agentCoreContext("widgets___widget_update")}))
			b := res.errorBody(t)
			if b.Error != "UNAUTHORIZED" || !strings.Contains(string(b.Details), string(tc.reason)) {
				t.Fatalf("answer = %+v, want UNAUTHORIZED with reason %s", b, tc.reason)
			}
			got := rec.only(t)
			if got.Caller != nil || got.Stage != adapter.StageAuthenticate {
				t.Fatalf("caller %+v stage %s", got.Caller, got.Stage)
			}
			if row := audited.last(t); row.CallerSubject != "" {
				t.Fatalf("row names caller %q", row.CallerSubject)
			}
		})
	}
}

// A client-sent _mcpfn that is not the interceptor's object is a bad request.
func TestAgentCoreMalformedReservedArgument(t *testing.T) {
	for _, payload := range []string{
		`{"entityId":"w-1","_mcpfn":"eyJ.x.y"}`,
		`{"entityId":"w-1","_mcpfn":null}`,
		`{"entityId":"w-1","_mcpfn":{"callToken":7}}`,
		`{"entityId":"w-1","_mcpfn":{}}`,
		`{"entityId":"w-1","\u005fmcpfn":["x"]}`,
	} {
		t.Run(payload, func(t *testing.T) {
			rec := newRecorder()
			fn := newFunction(widgetTool(t), adapter.WithHooks(rec.hooks()))
			res := agentCoreResult(t, invoke(t, fn, []byte(payload), lambdaInvoke{Custom: agentCoreContext("widgets___widget_update")}))
			if b := res.errorBody(t); b.Error != "BAD_REQUEST" || !strings.Contains(b.Message, "_mcpfn") {
				t.Fatalf("answer = %+v", b)
			}
			if got := rec.only(t); got.Caller != nil || got.Stage != adapter.StageDecode {
				t.Fatalf("caller %+v stage %s", got.Caller, got.Stage)
			}
		})
	}
}

// A replayed token names the call it was issued for: both invocations of a
// destructive tool carry the token's call id, so the write-ahead row (whose
// key is the call id) refuses the second: CONFLICT, the handler ran once.
func TestAgentCoreReplayedTokenKeepsItsCallID(t *testing.T) {
	audited := &rows{}
	runs := 0
	fn := newFunction(widgetTool(t, scopedWidget, func(d *adapter.ToolDef[widgetIn, widgetOut]) {
		d.Destructive, d.Idempotent = true, false
		h := d.Handler
		d.Handler = func(ctx context.Context, c *adapter.Call, in widgetIn) (widgetOut, error) {
			runs++
			return h(ctx, c, in)
		}
	}), adapter.WithAuditor(audited))
	tok := lambdatest.InterceptorToken(testFunction, "widget_update", "ic-once", alice, []byte(widgetArgs), time.Now().Add(time.Minute))
	var answers []callResult
	for i, req := range []string{"ac-req-1", "ac-req-2"} {
		custom := agentCoreContext("widgets___widget_update")
		custom["bedrockAgentCoreAwsRequestId"] = req
		answers = append(answers, agentCoreResult(t, invoke(t, fn, withToken(widgetArgs, tok), lambdaInvoke{Custom: custom})))
		if len(audited.pending) != i+1 || audited.pending[i].CallID != "ic-once" {
			t.Fatalf("invocation %d: %d pending rows, call id %q", i+1, len(audited.pending), audited.pending[len(audited.pending)-1].CallID)
		}
	}
	if answers[0].IsError || answers[1].errorBody(t).Error != "CONFLICT" || runs != 1 {
		t.Fatalf("first %+v, second %+v, handler ran %d times", answers[0], answers[1], runs)
	}
}
