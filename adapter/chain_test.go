package adapter_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/wire"
)

var alice = &adapter.Identity{Subject: "alice", AuthMethod: "jwt", Scopes: []string{"widgets:write"}, Tenant: "acme"}

func runOne(t *testing.T, fn *adapter.Function, args any, caller *adapter.Identity) (callResult, *wire.RPCError) {
	t.Helper()
	return envelopeResult(t, invoke(t, fn, envelopeOf(t, "call-1", "widget_update", args, caller), lambdaInvoke{}))
}

func TestSuccessRunsEveryStepInOrder(t *testing.T) {
	rec := newRecorder()
	fn := newFunction(widgetTool(t), adapter.WithHooks(rec.hooks()))
	res, rpcErr := runOne(t, fn, map[string]any{"entityId": "w-1"}, alice)
	if rpcErr != nil || res.IsError {
		t.Fatalf("want success, got %+v %+v", res, rpcErr)
	}
	if string(res.StructuredContent) != `{"entityId":"w-1","caller":"alice"}` {
		t.Fatalf("structuredContent = %s", res.StructuredContent)
	}
	if res.Content[0].Text != string(res.StructuredContent) {
		t.Fatalf("text content should mirror the structured output: %q", res.Content[0].Text)
	}
	got := rec.only(t)
	want := []string{"BeforeToolCall", "BeforeHandle", "AfterHandle", "AfterToolCall"}
	if !slices.Equal(got.Events, want) {
		t.Fatalf("events = %v, want %v", got.Events, want)
	}
	if got.Stage != adapter.StageDone || got.Err != nil || got.Dimensions["entityId"] != "w-1" {
		t.Fatalf("outcome = %+v", got)
	}
}

// TestOnToolErrorFiresOnlyForSteps4To6 is ADR 0041's contract: the raw error
// is observable exactly where scrubbing would destroy it, and nowhere else.
func TestOnToolErrorFiresOnlyForSteps4To6(t *testing.T) {
	reject := errors.New("rejected by policy")
	cases := []struct {
		name      string
		args      any
		caller    *adapter.Identity
		hooks     adapter.Hooks
		mod       func(*adapter.ToolDef[widgetIn, widgetOut])
		wantStage adapter.Stage
		wantCode  adapter.Code
		wantOnErr bool
	}{
		{name: "BeforeToolCall rejection", args: map[string]any{"entityId": "x"},
			hooks: adapter.Hooks{BeforeToolCall: func(context.Context, *adapter.Call, json.RawMessage) (json.RawMessage, error) {
				return nil, adapter.NewError(adapter.CodeBadRequest, "no")
			}},
			wantStage: adapter.StageBeforeToolCall, wantCode: adapter.CodeBadRequest},
		{name: "input validation", args: map[string]any{"entityId": 7},
			wantStage: adapter.StageValidateInput, wantCode: adapter.CodeValidation},
		{name: "BeforeHandle refusal", args: map[string]any{"entityId": "x"},
			hooks:     adapter.Hooks{BeforeHandle: func(context.Context, *adapter.Call) error { return reject }},
			wantStage: adapter.StageBeforeHandle, wantCode: adapter.CodeInternal, wantOnErr: true},
		{name: "handler error", args: map[string]any{"entityId": "x", "fail": "wrapped"},
			wantStage: adapter.StageHandler, wantCode: adapter.CodeInternal, wantOnErr: true},
		{name: "handler panic", args: map[string]any{"entityId": "x", "fail": "panic"},
			wantStage: adapter.StageHandler, wantCode: adapter.CodeInternal, wantOnErr: true},
		{name: "AfterHandle error", args: map[string]any{"entityId": "x"},
			hooks: adapter.Hooks{AfterHandle: func(context.Context, *adapter.Call, any) (any, error) {
				return nil, adapter.NewError(adapter.CodeConflict, "after")
			}},
			wantStage: adapter.StageAfterHandle, wantCode: adapter.CodeConflict, wantOnErr: true},
		{name: "output mismatch", args: map[string]any{"entityId": "x"},
			hooks: adapter.Hooks{AfterHandle: func(context.Context, *adapter.Call, any) (any, error) {
				return map[string]any{"unexpected": true}, nil
			}},
			wantStage: adapter.StageValidateOutput, wantCode: adapter.CodeInternal},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder()
			caller := tc.caller
			if caller == nil {
				caller = alice
			}
			fn := newFunction(widgetTool(t), adapter.WithHooks(rec.hooks(), tc.hooks), quietLogger())
			res, rpcErr := runOne(t, fn, tc.args, caller)
			if rpcErr != nil {
				t.Fatalf("unexpected protocol error %+v", rpcErr)
			}
			body := res.errorBody(t)
			if body.Error != string(tc.wantCode) {
				t.Fatalf("caller got %s, want %s (%+v)", body.Error, tc.wantCode, body)
			}
			got := rec.only(t)
			if got.Stage != tc.wantStage {
				t.Fatalf("stage %s, want %s", got.Stage, tc.wantStage)
			}
			var onErr []string
			for _, ev := range got.Events {
				if strings.HasPrefix(ev, "OnToolError") {
					onErr = append(onErr, ev)
				}
			}
			if tc.wantOnErr != (len(onErr) == 1) || len(onErr) > 1 {
				t.Fatalf("OnToolError events %v (want fired=%v)", onErr, tc.wantOnErr)
			}
			if tc.wantOnErr && got.Events[len(got.Events)-2] != onErr[0] {
				t.Fatalf("OnToolError must run right before AfterToolCall: %v", got.Events)
			}
			if got.Events[len(got.Events)-1] != "AfterToolCall" {
				t.Fatalf("AfterToolCall must be last: %v", got.Events)
			}
		})
	}
}

func TestOnToolErrorGetsTheRawErrorWithItsCauses(t *testing.T) {
	var seen error
	fn := newFunction(widgetTool(t), adapter.WithHooks(adapter.Hooks{
		OnToolError: func(_ context.Context, _ *adapter.Call, err error) { seen = err },
	}))
	res, _ := runOne(t, fn, map[string]any{"entityId": "w-9", "fail": "wrapped"}, nil)
	if !errors.Is(seen, errSecret) || !strings.Contains(seen.Error(), "updating widget w-9") {
		t.Fatalf("OnToolError saw %v; want the wrapped raw error", seen)
	}
	body := res.errorBody(t)
	if body.Error != "INTERNAL_SERVER_ERROR" || body.Message != "Internal server error" {
		t.Fatalf("caller saw %+v", body)
	}
}

// TestUnexpectedErrorsAreScrubbed: the caller (a model, who relays it) never
// sees a raw message; the hooks and the audit see it whole.
func TestUnexpectedErrorsAreScrubbed(t *testing.T) {
	for _, fail := range []string{"raw", "wrapped", "panic"} {
		t.Run(fail, func(t *testing.T) {
			rec := newRecorder()
			fn := newFunction(widgetTool(t), adapter.WithHooks(rec.hooks()), quietLogger())
			raw := invoke(t, fn, envelopeOf(t, "c", "widget_update", map[string]any{"entityId": "w", "fail": fail}, nil), lambdaInvoke{})
			for _, leak := range []string{"hunter2", "postgres", "10.0.0.5", "exploded"} {
				if strings.Contains(string(raw), leak) {
					t.Fatalf("response leaks %q: %s", leak, raw)
				}
			}
			got := rec.only(t)
			if got.Public.Code != adapter.CodeInternal {
				t.Fatalf("public code %s", got.Public.Code)
			}
			if fail == "panic" {
				var pe *adapter.PanicError
				if !errors.As(got.Err, &pe) || !strings.Contains(pe.Error(), "exploded") {
					t.Fatalf("hooks should see the panic value, got %v", got.Err)
				}
			} else if !errors.Is(got.Err, errSecret) {
				t.Fatalf("hooks should see the raw error, got %v", got.Err)
			}
		})
	}
}

func TestAppErrorPassesThrough(t *testing.T) {
	fn := newFunction(widgetTool(t))
	res, _ := runOne(t, fn, map[string]any{"entityId": "w-2", "fail": "app"}, nil)
	body := res.errorBody(t)
	if body.Error != "CONFLICT" || body.Message != "widget w-2 is locked" || body.Hint != "retry later" || body.Retryable {
		t.Fatalf("body = %+v", body)
	}
}

func TestBeforeToolCallReplacesArgumentsAndTheyAreRevalidated(t *testing.T) {
	replaceWith := func(args string) adapter.Hooks {
		return adapter.Hooks{BeforeToolCall: func(context.Context, *adapter.Call, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(args), nil
		}}
	}
	rec := newRecorder()
	fn := newFunction(widgetTool(t), adapter.WithHooks(replaceWith(`{"entityId":"replaced"}`), rec.hooks()))
	res, _ := runOne(t, fn, map[string]any{"entityId": "original"}, nil)
	if string(res.StructuredContent) != `{"entityId":"replaced"}` {
		t.Fatalf("handler should get the replacement, got %s", res.StructuredContent)
	}
	if rec.only(t).Arguments != `{"entityId":"replaced"}` {
		t.Fatalf("the call's arguments should be the replacement")
	}

	fn = newFunction(widgetTool(t), adapter.WithHooks(replaceWith(`{"entityId":42}`)))
	res, _ = runOne(t, fn, map[string]any{"entityId": "original"}, nil)
	if res.errorBody(t).Error != "VALIDATION_ERROR" {
		t.Fatal("a replacement must be validated like the original")
	}
}

func TestAfterHandleReplacesOutput(t *testing.T) {
	fn := newFunction(widgetTool(t), adapter.WithHooks(adapter.Hooks{
		AfterHandle: func(_ context.Context, _ *adapter.Call, out any) (any, error) {
			o := out.(widgetOut)
			o.EntityID = "after-" + o.EntityID
			return o, nil
		},
	}))
	res, _ := runOne(t, fn, map[string]any{"entityId": "w"}, nil)
	if string(res.StructuredContent) != `{"entityId":"after-w"}` {
		t.Fatalf("got %s", res.StructuredContent)
	}
}

// TestHookSetsCompose: Before hooks in the order given, After hooks in
// reverse, like middleware.
func TestHookSetsCompose(t *testing.T) {
	var order []string
	set := func(name string) adapter.Hooks {
		return adapter.Hooks{
			BeforeToolCall: func(context.Context, *adapter.Call, json.RawMessage) (json.RawMessage, error) {
				order = append(order, name+".BeforeToolCall")
				return nil, nil
			},
			BeforeHandle: func(context.Context, *adapter.Call) error { order = append(order, name+".BeforeHandle"); return nil },
			AfterHandle: func(context.Context, *adapter.Call, any) (any, error) {
				order = append(order, name+".AfterHandle")
				return nil, nil
			},
			AfterToolCall: func(context.Context, *adapter.Call, *adapter.Outcome) { order = append(order, name+".AfterToolCall") },
		}
	}
	fn := newFunction(widgetTool(t), adapter.WithHooks(set("a")), adapter.WithHooks(set("b")))
	runOne(t, fn, map[string]any{"entityId": "w"}, nil)
	want := []string{"a.BeforeToolCall", "b.BeforeToolCall", "a.BeforeHandle", "b.BeforeHandle",
		"b.AfterHandle", "a.AfterHandle", "b.AfterToolCall", "a.AfterToolCall"}
	if !slices.Equal(order, want) {
		t.Fatalf("order = %v\nwant    %v", order, want)
	}
}

// TestPanickingHooksChangeOnlyWhatTheyShould: a panic in an observing hook is
// swallowed (the result and the other hooks are untouched); a panic in a
// deciding hook fails the call like a returned error.
func TestPanickingHooksChangeOnlyWhatTheyShould(t *testing.T) {
	boom := func() { panic("hook exploded") }
	t.Run("AfterToolCall and OnToolError panics are swallowed", func(t *testing.T) {
		rec := newRecorder()
		fn := newFunction(widgetTool(t), quietLogger(), adapter.WithHooks(rec.hooks(), adapter.Hooks{
			OnToolError:   func(context.Context, *adapter.Call, error) { boom() },
			AfterToolCall: func(context.Context, *adapter.Call, *adapter.Outcome) { boom() },
		}))
		res, _ := runOne(t, fn, map[string]any{"entityId": "w"}, nil)
		if res.IsError {
			t.Fatalf("a panicking AfterToolCall changed a success: %+v", res)
		}
		res, _ = runOne(t, fn, map[string]any{"entityId": "w", "fail": "app"}, nil)
		if res.errorBody(t).Error != "CONFLICT" {
			t.Fatal("a panicking OnToolError replaced the failure it observed")
		}
		if len(rec.done) != 2 {
			t.Fatalf("the other set's AfterToolCall must still run: %d", len(rec.done))
		}
	})
	t.Run("BeforeHandle panic fails the call and is observed raw", func(t *testing.T) {
		rec := newRecorder()
		fn := newFunction(widgetTool(t), adapter.WithHooks(rec.hooks(), adapter.Hooks{
			BeforeHandle: func(context.Context, *adapter.Call) error { boom(); return nil },
		}))
		res, _ := runOne(t, fn, map[string]any{"entityId": "w"}, nil)
		if res.errorBody(t).Error != "INTERNAL_SERVER_ERROR" {
			t.Fatal("want INTERNAL_SERVER_ERROR")
		}
		got := rec.only(t)
		if got.Stage != adapter.StageBeforeHandle || !strings.Contains(got.Err.Error(), "hook exploded") {
			t.Fatalf("got %+v", got)
		}
	})
	t.Run("BeforeToolCall panic is a rejection", func(t *testing.T) {
		rec := newRecorder()
		fn := newFunction(widgetTool(t), adapter.WithHooks(rec.hooks(), adapter.Hooks{
			BeforeToolCall: func(context.Context, *adapter.Call, json.RawMessage) (json.RawMessage, error) {
				boom()
				return nil, nil
			},
		}))
		runOne(t, fn, map[string]any{"entityId": "w"}, nil)
		got := rec.only(t)
		if got.Stage != adapter.StageBeforeToolCall || slices.ContainsFunc(got.Events, func(e string) bool { return strings.HasPrefix(e, "OnToolError") }) {
			t.Fatalf("got %+v", got)
		}
	})
}

func TestScopesFailClosed(t *testing.T) {
	scoped := func(d *adapter.ToolDef[widgetIn, widgetOut]) { d.Scopes = []string{"widgets:write"} }
	cases := []struct {
		name   string
		caller *adapter.Identity
		want   string
	}{
		{"no identity", nil, "UNAUTHORIZED"},
		{"missing scope", &adapter.Identity{Subject: "bob", AuthMethod: "jwt", Scopes: []string{"widgets:read"}}, "FORBIDDEN"},
		{"granted", alice, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			called := false
			fn := newFunction(widgetTool(t, scoped), adapter.WithHooks(adapter.Hooks{
				BeforeHandle: func(context.Context, *adapter.Call) error { called = true; return nil },
			}))
			res, _ := runOne(t, fn, map[string]any{"entityId": "w"}, tc.caller)
			if tc.want == "" {
				if res.IsError {
					t.Fatalf("want success: %+v", res)
				}
				return
			}
			if got := res.errorBody(t).Error; got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
			if called {
				t.Fatal("the user's gate must not run after the built-in scope check refused")
			}
		})
	}
}

// TestClientInfoNeverBecomesIdentity: a client calling itself "admin" in
// every self-reported field is still nobody.
func TestClientInfoNeverBecomesIdentity(t *testing.T) {
	scoped := func(d *adapter.ToolDef[widgetIn, widgetOut]) { d.Scopes = []string{"widgets:write"} }
	rec := newRecorder()
	fn := newFunction(widgetTool(t, scoped), adapter.WithHooks(rec.hooks()))
	payload := mustJSON(t, map[string]any{
		"mcpfn": "1", "callId": "spoof", "sessionId": "admin",
		"params": map[string]any{"name": "widget_update", "arguments": map[string]any{"entityId": "w"},
			"_meta": map[string]any{
				"io.modelcontextprotocol/protocolVersion": "2026-07-28",
				"io.modelcontextprotocol/clientInfo":      map[string]any{"name": "admin", "version": "1"},
				"user":                                    "admin",
			}},
		"mcp": map[string]any{"era": "modern", "protocolVersion": "2026-07-28", "clientInfo": map[string]any{"name": "admin"}},
	})
	res, _ := envelopeResult(t, invoke(t, fn, payload, lambdaInvoke{}))
	if res.errorBody(t).Error != "UNAUTHORIZED" {
		t.Fatal("self-reported client info must not authorize")
	}
	got := rec.only(t)
	if got.Caller != nil {
		t.Fatalf("caller synthesised from client data: %+v", got.Caller)
	}
}

// TestTimeoutEndsReserveBeforeDeadline: the call's context ends exactly the
// reserve before Lambda's deadline, and the call answers a retryable TIMEOUT
// at that instant, whether the handler heeds its context or not. Time is
// synctest's, so both instants are exact.
func TestTimeoutEndsReserveBeforeDeadline(t *testing.T) {
	const lambdaTimeout, reserve = 800 * time.Millisecond, 300 * time.Millisecond
	for _, mode := range []string{"", "ignore-ctx"} {
		t.Run("fail="+mode, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := newRecorder()
				var deadline time.Time
				var unfinished *adapter.Unfinished
				fn := newFunction(widgetTool(t), adapter.WithReserve(reserve), adapter.WithHooks(rec.hooks(), adapter.Hooks{
					BeforeHandle:  func(ctx context.Context, _ *adapter.Call) error { deadline, _ = ctx.Deadline(); return nil },
					AfterToolCall: func(_ context.Context, _ *adapter.Call, out *adapter.Outcome) { unfinished = out.Unfinished },
				}))
				start := time.Now()
				raw := invoke(t, fn, envelopeOf(t, "slow", "widget_update", map[string]any{"entityId": "w", "sleepMs": 5000, "fail": mode}, nil),
					lambdaInvoke{Timeout: lambdaTimeout})
				if want := start.Add(lambdaTimeout - reserve); !deadline.Equal(want) {
					t.Fatalf("call context ends %v before the Lambda deadline, want the %v reserve", start.Add(lambdaTimeout).Sub(deadline), reserve)
				}
				if took := time.Since(start); took != lambdaTimeout-reserve {
					t.Fatalf("the call answered after %v, want at its deadline %v", took, lambdaTimeout-reserve)
				}
				res, _ := envelopeResult(t, raw)
				body := res.errorBody(t)
				if body.Error != "TIMEOUT" || !body.Retryable {
					t.Fatalf("want retryable TIMEOUT, got %+v", body)
				}
				got := rec.only(t)
				if got.Stage != adapter.StageHandler || !errors.Is(got.Err, context.DeadlineExceeded) {
					t.Fatalf("got %+v", got)
				}
				if mode == "ignore-ctx" {
					// The handler runs on past the call; the bubble ends only
					// when it does, 5 s of synctest time after the start.
					if unfinished == nil {
						t.Fatal("a handler still running at the deadline must be reported Unfinished")
					}
					<-unfinished.Done()
					if took := unfinished.FinishedAt().Sub(start); took != 5*time.Second {
						t.Errorf("the abandoned handler finished after %v, want its 5s", took)
					}
				}
			})
		})
	}
}

type staticCreds struct{}

func (staticCreds) Resolve(_ context.Context, c *adapter.Call, need adapter.CredentialNeed) (*adapter.Credential, error) {
	return &adapter.Credential{Name: need.Name, Kind: need.Kind, Secret: "s3cr3t-for-" + c.Caller().Subject}, nil
}

func TestCredentials(t *testing.T) {
	needsGitHub := func(d *adapter.ToolDef[widgetIn, widgetOut]) {
		d.Credentials = []adapter.CredentialNeed{{Name: "github", Kind: "oauth2"}}
		d.Handler = func(ctx context.Context, c *adapter.Call, in widgetIn) (widgetOut, error) {
			cr, ok := c.Credential("github")
			if !ok || !c.HasCredentials() {
				return widgetOut{}, adapter.NewError(adapter.CodeUnauthorized, "no credential")
			}
			if _, err := c.ResolveCredential(ctx, adapter.CredentialNeed{Name: "extra"}); err != nil {
				return widgetOut{}, err
			}
			return widgetOut{EntityID: cr.Secret}, nil
		}
	}
	t.Run("attached", func(t *testing.T) {
		fn := newFunction(widgetTool(t, needsGitHub), adapter.WithCredentials(staticCreds{}))
		res, _ := runOne(t, fn, map[string]any{"entityId": "w"}, alice)
		if string(res.StructuredContent) != `{"entityId":"s3cr3t-for-alice"}` {
			t.Fatalf("got %+v", res)
		}
	})
	t.Run("none attached fails closed", func(t *testing.T) {
		rec := newRecorder()
		fn := newFunction(widgetTool(t, needsGitHub), adapter.WithHooks(rec.hooks()))
		res, _ := runOne(t, fn, map[string]any{"entityId": "w"}, alice)
		if res.errorBody(t).Error != "INTERNAL_SERVER_ERROR" {
			t.Fatal("want a failure")
		}
		if !errors.Is(rec.only(t).Err, adapter.ErrNoCredentials) {
			t.Fatalf("hooks should see ErrNoCredentials, got %v", rec.only(t).Err)
		}
	})
	t.Run("pull without provider", func(t *testing.T) {
		var err error
		fn := newFunction(widgetTool(t, func(d *adapter.ToolDef[widgetIn, widgetOut]) {
			d.Handler = func(ctx context.Context, c *adapter.Call, in widgetIn) (widgetOut, error) {
				_, err = c.ResolveCredential(ctx, adapter.CredentialNeed{Name: "x"})
				return widgetOut{EntityID: in.EntityID}, nil
			}
		}))
		runOne(t, fn, map[string]any{"entityId": "w"}, nil)
		if !errors.Is(err, adapter.ErrNoCredentials) || !strings.Contains(err.Error(), "WithCredentials") {
			t.Fatalf("want a teaching refusal, got %v", err)
		}
	})
}

func TestTeardownScopes(t *testing.T) {
	var ran []string
	var envErr error
	var scopes []adapter.TeardownScope
	fn := newFunction(widgetTool(t, func(d *adapter.ToolDef[widgetIn, widgetOut]) {
		d.Handler = func(_ context.Context, c *adapter.Call, in widgetIn) (widgetOut, error) {
			scopes = c.TeardownScopes()
			if err := c.OnTeardown(adapter.TeardownCall, func() { ran = append(ran, "call") }); err != nil {
				return widgetOut{}, err
			}
			envErr = c.OnTeardown(adapter.TeardownEnvironment, func() { ran = append(ran, "env") })
			return widgetOut{EntityID: in.EntityID}, nil
		}
	}), adapter.WithHooks(adapter.Hooks{AfterToolCall: func(context.Context, *adapter.Call, *adapter.Outcome) {
		ran = append(ran, "AfterToolCall")
	}}))
	runOne(t, fn, map[string]any{"entityId": "w"}, nil)
	if !slices.Equal(scopes, []adapter.TeardownScope{adapter.TeardownCall}) {
		t.Fatalf("scopes = %v", scopes)
	}
	if envErr == nil || !strings.Contains(envErr.Error(), "not honoured") {
		t.Fatalf("registering an unsupported scope must error, got %v", envErr)
	}
	if !slices.Equal(ran, []string{"AfterToolCall", "call"}) {
		t.Fatalf("ran = %v", ran)
	}
}

// TestOutputValidatedWhereItCanDiffer: a given output schema, or an output
// type that marshals itself, is validated; a mismatch is the tool's fault.
func TestOutputValidatedWhereItCanDiffer(t *testing.T) {
	type stamped struct {
		At time.Time `json:"at"`
	}
	given, err := adapter.Define(adapter.ToolDef[widgetIn, widgetOut]{
		Name: "widget_update",
		OutputSchema: &jsonschema.Schema{Type: "object", Required: []string{"entityId"},
			Properties: map[string]*jsonschema.Schema{"entityId": {Type: "string", MinLength: jsonschema.Ptr(5)}}},
		Handler: widgetHandler,
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	res, _ := runOne(t, newFunction(given, adapter.WithHooks(rec.hooks())), map[string]any{"entityId": "abc"}, nil)
	if res.errorBody(t).Error != "INTERNAL_SERVER_ERROR" || rec.only(t).Stage != adapter.StageValidateOutput {
		t.Fatalf("a short id breaks the given output schema: %+v", rec.only(t))
	}
	res, _ = runOne(t, newFunction(given), map[string]any{"entityId": "abcdef"}, nil)
	if res.IsError {
		t.Fatalf("valid output rejected: %+v", res)
	}

	timed := adapter.MustDefine(adapter.ToolDef[widgetIn, stamped]{
		Name: "widget_update",
		Handler: func(context.Context, *adapter.Call, widgetIn) (stamped, error) {
			return stamped{At: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}, nil
		},
	})
	res, _ = runOne(t, newFunction(timed), map[string]any{"entityId": "w"}, nil)
	if res.IsError || string(res.StructuredContent) != `{"at":"2026-11-29T12:00:00Z"}` {
		t.Fatalf("got %+v", res)
	}
}

// TestCallFromContext: code deep in a handler (a store, a client wrapper)
// finds the call through the context it was handed.
func TestCallFromContext(t *testing.T) {
	var same bool
	fn := newFunction(widgetTool(t, func(d *adapter.ToolDef[widgetIn, widgetOut]) {
		d.Handler = func(ctx context.Context, c *adapter.Call, in widgetIn) (widgetOut, error) {
			got, ok := adapter.CallFrom(ctx)
			same = ok && got == c
			return widgetOut{EntityID: in.EntityID}, nil
		}
	}))
	runOne(t, fn, map[string]any{"entityId": "w"}, nil)
	if !same {
		t.Fatal("CallFrom(ctx) inside the handler must return the handler's own Call")
	}
	if _, ok := adapter.CallFrom(context.Background()); ok {
		t.Fatal("a context outside any call has no Call")
	}
}
