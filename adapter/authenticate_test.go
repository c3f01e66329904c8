package adapter_test

import (
	"context"
	"encoding/base64"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/calltoken"
	"github.com/mcpfn/mcpfn/internal/lambdatest"
)

// forged is what an insider with lambda:InvokeFunction sends: an envelope
// naming a caller, with the token of their choice.
func forged(t *testing.T, token string, caller *adapter.Identity, args string) []byte {
	t.Helper()
	env := map[string]any{
		"mcpfn": "1", "callId": "c-1",
		"params": map[string]any{"name": "widget_update", "arguments": rawJSON(args)},
		"caller": caller,
	}
	if token != "" {
		env["callToken"] = token
	}
	return mustJSON(t, env)
}

type rawJSON string

func (r rawJSON) MarshalJSON() ([]byte, error) { return []byte(r), nil }

const widgetArgs = `{"entityId":"w-1"}`

func tokenFor(fn, tool, callID string, caller *adapter.Identity, args string, expires time.Time) string {
	s := lambdatest.Signer(map[string]string{tool: fn})
	tok, err := s.Sign(calltoken.Call{Tool: tool, CallID: callID, Caller: caller, Args: []byte(args), Expires: expires})
	if err != nil {
		panic(err)
	}
	return tok
}

// Every forged, foreign, stale or altered token is refused before any hook
// past decode runs: UNAUTHORIZED with its reason, no handler, no identity,
// and the claimed caller kept only as unverified.
func TestForgedEnvelopesAreRefused(t *testing.T) {
	mallory := &adapter.Identity{Subject: "mallory", AuthMethod: "jwt", Scopes: []string{"widgets:write"}}
	in := time.Now().Add(time.Minute)
	good := tokenFor(testFunction, "widget_update", "c-1", alice, widgetArgs, in)
	tamper := func(tok, from, to string) string {
		p := strings.Split(tok, ".")
		body, _ := base64.RawURLEncoding.DecodeString(p[1])
		return p[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(body), from, to, 1))) + "." + p[2]
	}
	cases := []struct {
		name, token, args string
		reason            calltoken.Reason
	}{
		{"no token, caller named", "", widgetArgs, calltoken.ReasonMissing},
		{"junk token", "eyJhbGciOiJub25lIn0.e30.", widgetArgs, calltoken.ReasonMalformed},
		{"token of another function's key", tokenFor("other-function", "widget_update", "c-1", mallory, widgetArgs, in), widgetArgs, calltoken.ReasonAudience},
		{"minted by another function with its own key", mintedBy(t, "other-function", mallory), widgetArgs, calltoken.ReasonUnknownKey},
		{"expired", tokenFor(testFunction, "widget_update", "c-1", mallory, widgetArgs, time.Now().Add(-time.Minute)), widgetArgs, calltoken.ReasonExpired},
		{"tampered subject", tamper(good, `"alice"`, `"mallo"`), widgetArgs, calltoken.ReasonSignature},
		{"tampered scopes", tamper(good, `widgets:write`, `widgets:admin`), widgetArgs, calltoken.ReasonSignature},
		{"other call's token", tokenFor(testFunction, "widget_update", "c-2", alice, widgetArgs, in), widgetArgs, calltoken.ReasonCallID},
		{"other arguments", good, `{"entityId":"w-2"}`, calltoken.ReasonArguments},
		{"other tool's token", tokenFor(testFunction, "widget_delete", "c-1", alice, widgetArgs, in), widgetArgs, calltoken.ReasonTool},
		// The interceptor signs _mcpfn for AgentCore, never an envelope.
		{"signed by the interceptor", lambdatest.InterceptorToken(testFunction, "widget_update", "c-1", mallory, []byte(widgetArgs), in), widgetArgs, calltoken.ReasonSigner},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder()
			ran := false
			fn := newFunction(widgetTool(t, func(d *adapter.ToolDef[widgetIn, widgetOut]) {
				h := d.Handler
				d.Handler = func(ctx context.Context, c *adapter.Call, in widgetIn) (widgetOut, error) {
					ran = true
					return h(ctx, c, in)
				}
			}), adapter.WithHooks(rec.hooks()))
			res, rpcErr := envelopeResult(t, invoke(t, fn, forged(t, tc.token, mallory, tc.args), lambdaInvoke{}))
			if rpcErr != nil {
				t.Fatalf("want a tool error, got a protocol error %+v", rpcErr)
			}
			body := res.errorBody(t)
			if body.Error != "UNAUTHORIZED" || !strings.Contains(string(body.Details), string(tc.reason)) || body.Retryable {
				t.Fatalf("answer = %+v, want UNAUTHORIZED with reason %s", body, tc.reason)
			}
			got := rec.only(t)
			if ran || got.Caller != nil || got.Stage != adapter.StageAuthenticate {
				t.Fatalf("handler ran=%v caller=%+v stage=%s", ran, got.Caller, got.Stage)
			}
			if !slices.Equal(got.Events, []string{"AfterToolCall"}) {
				t.Fatalf("hooks that ran: %v; want only AfterToolCall", got.Events)
			}
		})
	}
}

// mintedBy is what a compromised function could sign with its own key, for
// this function's audience.
func mintedBy(t *testing.T, compromised string, caller *adapter.Identity) string {
	t.Helper()
	s := calltoken.NewSigner(calltoken.SignerGateway)
	s.Add("widget_update", testFunction, lambdatest.Keyring(compromised), nil)
	tok, err := s.Sign(calltoken.Call{Tool: "widget_update", CallID: "c-1", Caller: caller, Args: []byte(widgetArgs), Expires: time.Now().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// A verified token's caller is the call's caller, scopes and tenant included.
func TestSignedEnvelopeCarriesTheVerifiedCaller(t *testing.T) {
	rec := newRecorder()
	fn := newFunction(widgetTool(t), adapter.WithHooks(rec.hooks()))
	tok := tokenFor(testFunction, "widget_update", "c-1", alice, widgetArgs, time.Now().Add(time.Minute))
	// The payload names someone else too: only the token counts.
	res, rpcErr := envelopeResult(t, invoke(t, fn, forged(t, tok, &adapter.Identity{Subject: "mallory"}, widgetArgs), lambdaInvoke{}))
	if rpcErr != nil || res.IsError {
		t.Fatalf("want success, got %+v %+v", res, rpcErr)
	}
	got := rec.only(t)
	if got.Caller == nil || got.Caller.Subject != "alice" || !got.Caller.HasScope("widgets:write") {
		t.Fatalf("caller = %+v", got.Caller)
	}
}

// A function without keys cannot tell the gateway from anyone: it refuses
// every envelope.
func TestFunctionWithoutKeysRefusesEnvelopes(t *testing.T) {
	rec := newRecorder()
	fn := adapter.New(widgetTool(t), adapter.WithHooks(rec.hooks()))
	tok := tokenFor(testFunction, "widget_update", "c-1", alice, widgetArgs, time.Now().Add(time.Minute))
	res, _ := envelopeResult(t, invoke(t, fn, forged(t, tok, nil, widgetArgs), lambdaInvoke{}))
	if b := res.errorBody(t); b.Error != "UNAUTHORIZED" || !strings.Contains(string(b.Details), string(calltoken.ReasonNoKeys)) {
		t.Fatalf("answer = %+v", b)
	}
	if rec.only(t).Caller != nil {
		t.Fatal("a caller without verification")
	}
}

// A request-state key shorter than 32 bytes is refused at start.
func TestShortRequestStateKeyIsRefused(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("New accepted a 16-byte request-state key")
		}
	}()
	adapter.New(widgetTool(t), adapter.WithRequestStateKey([]byte("0123456789abcdef")))
}

// An empty request-state key is shorter than 32 bytes too: refused, never
// replaced by a random per-process key (an unset variable would otherwise
// break every later round served by another environment, silently).
func TestEmptyRequestStateKeyIsRefused(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("New accepted an empty request-state key")
		}
	}()
	adapter.New(widgetTool(t), adapter.WithRequestStateKey(nil))
}

// A function whose keys are too old to trust and cannot be read again
// (Secrets Manager unreachable) answers UNAVAILABLE, retryable, with the
// reason: not UNAUTHORIZED, which would blame the caller. The handler
// never runs.
func TestStaleKeysAreUnavailable(t *testing.T) {
	clock := time.Now().Add(-calltoken.DefaultKeyStaleLimit)
	v, err := calltoken.NewVerifier(calltoken.VerifierConfig{
		Audience: testFunction, Keyring: lambdatest.Keyring(testFunction), Now: func() time.Time { return clock },
		Reload: func(context.Context) (*calltoken.Keyring, error) {
			return nil, errors.New("secrets manager unreachable")
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	clock = time.Now()
	rec := newRecorder()
	ran := false
	fn := adapter.New(widgetTool(t, func(d *adapter.ToolDef[widgetIn, widgetOut]) {
		d.Handler = func(context.Context, *adapter.Call, widgetIn) (widgetOut, error) { ran = true; return widgetOut{}, nil }
	}), adapter.WithCallVerifier(v), adapter.WithHooks(rec.hooks()))
	tok := tokenFor(testFunction, "widget_update", "c-1", alice, widgetArgs, time.Now().Add(time.Minute))
	res, _ := envelopeResult(t, invoke(t, fn, forged(t, tok, nil, widgetArgs), lambdaInvoke{}))
	if b := res.errorBody(t); b.Error != "UNAVAILABLE" || !b.Retryable || !strings.Contains(string(b.Details), string(calltoken.ReasonKeysUnusable)) {
		t.Fatalf("answer = %+v", b)
	}
	if ran || rec.only(t).Caller != nil {
		t.Fatal("the call ran, or has a caller, with keys the function could not check")
	}
}
