package calltoken_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/golang-jwt/jwt/v5"

	"github.com/mcpfn/mcpfn/calltoken"
	"github.com/mcpfn/mcpfn/internal/secretsstandin"
)

var (
	secretA = []byte("function-a-secret-0123456789abcdefghijklmnop")
	secretB = []byte("function-b-secret-0123456789abcdefghijklmnop")
	args    = []byte(`{"id":"b-1"}`)
)

func ring(t *testing.T, secrets ...[]byte) *calltoken.Keyring {
	t.Helper()
	r, err := calltoken.KeyringFromSecrets(secrets[0], secrets[1:]...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func verifier(t *testing.T, audience string, r *calltoken.Keyring, now func() time.Time) *calltoken.Verifier {
	t.Helper()
	v, err := calltoken.NewVerifier(calltoken.VerifierConfig{Audience: audience, Keyring: r, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func sign(t *testing.T, s *calltoken.Signer, c calltoken.Call) string {
	t.Helper()
	tok, err := s.Sign(c)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

var alice = &calltoken.Identity{Subject: "alice", AuthMethod: "jwt", Issuer: "https://issuer.example", Scopes: []string{"broadcasts:write"}, Tenant: "acme"}

func call() calltoken.Call {
	return calltoken.Call{Tool: "broadcast_delete", CallID: "c-1", Caller: alice, Args: args, Expires: time.Now().Add(30 * time.Second)}
}

func want() calltoken.Expect {
	return calltoken.Expect{Tool: "broadcast_delete", CallID: "c-1", Args: args}
}

func TestSignedCallVerifiesAndCarriesTheCaller(t *testing.T) {
	s := calltoken.NewSigner(calltoken.SignerGateway)
	s.Add("broadcast_delete", "arn:aws:lambda:us-east-1:123456789012:function:fn-delete:live", ring(t, secretA), nil)
	v := verifier(t, "fn-delete", ring(t, secretA), nil)
	c, err := v.Verify(context.Background(), sign(t, s, call()), want())
	if err != nil {
		t.Fatal(err)
	}
	if c.Caller.Subject != "alice" || c.Caller.Issuer != alice.Issuer || c.Caller.Tenant != "acme" || !c.Caller.HasScope("broadcasts:write") {
		t.Fatalf("caller = %+v", c.Caller)
	}
}

func TestArgumentsDigestIsCanonical(t *testing.T) {
	a := calltoken.ArgsDigest([]byte(`{"b":1, "a":{"y":[1,2.50],"x":"<"}}`))
	b := calltoken.ArgsDigest([]byte(` {"a":{"x":"\u003c","y":[1,2.50]},"b":1}`))
	if a != b {
		t.Fatal("the same arguments in another key order digest differently")
	}
	if calltoken.ArgsDigest(nil) != calltoken.ArgsDigest([]byte("{}")) || calltoken.ArgsDigest([]byte("null")) != calltoken.ArgsDigest([]byte(" {} ")) {
		t.Fatal("absent, null and empty arguments must digest alike")
	}
	if calltoken.ArgsDigest([]byte(`{"n":1}`)) == calltoken.ArgsDigest([]byte(`{"n":1.0}`)) {
		t.Fatal("numbers are digested as written")
	}
}

// Every way a token can be wrong is refused with its own reason.
func TestRefusals(t *testing.T) {
	now := time.Now()
	gw := calltoken.NewSigner(calltoken.SignerGateway)
	gw.Add("broadcast_delete", "fn-delete", ring(t, secretA), nil)
	gw.Add("broadcast_get", "fn-get", ring(t, secretB), nil)
	good := sign(t, gw, call())
	v := verifier(t, "fn-delete", ring(t, secretA), nil)

	tamper := func(tok string, f func(string) string) string {
		p := strings.Split(tok, ".")
		payload, _ := base64.RawURLEncoding.DecodeString(p[1])
		return p[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(f(string(payload)))) + "." + p[2]
	}
	expired := call()
	expired.Expires = now.Add(-time.Minute)
	otherCall := want()
	otherCall.CallID = "c-2"
	otherArgs := want()
	otherArgs.Args = []byte(`{"id":"b-2"}`)
	otherTool := want()
	otherTool.Tool = "broadcast_get"

	cases := []struct {
		name  string
		token string
		want  calltoken.Expect
		v     *calltoken.Verifier
		is    calltoken.Reason
	}{
		{"missing", "", want(), v, calltoken.ReasonMissing},
		{"junk", "not.a.jwt", want(), v, calltoken.ReasonMalformed},
		{"oversized", strings.Repeat("a", calltoken.MaxTokenBytes+1), want(), v, calltoken.ReasonOversized},
		{"expired", sign(t, gw, expired), want(), v, calltoken.ReasonExpired},
		{"for another function", sign(t, gw, calltoken.Call{Tool: "broadcast_get", CallID: "c-1", Args: args, Expires: now.Add(time.Minute)}), otherTool, v, calltoken.ReasonAudience},
		{"for another call", good, otherCall, v, calltoken.ReasonCallID},
		{"for other arguments", good, otherArgs, v, calltoken.ReasonArguments},
		{"for another tool of the same function", good, otherTool, v, calltoken.ReasonTool},
		{"tampered caller", tamper(good, func(p string) string { return strings.Replace(p, "alice", "mallo", 1) }), want(), v, calltoken.ReasonSignature},
		{"tampered scopes", tamper(good, func(p string) string {
			return strings.Replace(p, `"scopes":["broadcasts:write"]`, `"scopes":["admin:all"]`, 1)
		}), want(), v, calltoken.ReasonSignature},
		{"another function's key", sign(t, keyedAs(t, "fn-delete", secretB), call()), want(), v, calltoken.ReasonUnknownKey},
		{"alg none", noneToken(t, now), want(), v, calltoken.ReasonAlgorithm},
		{"signed by a stranger", sign(t, strangerSigner(t), call()), want(), v, calltoken.ReasonSigner},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := tc.v.Verify(context.Background(), tc.token, tc.want)
			if c != nil || calltoken.ReasonOf(err) != tc.is {
				t.Fatalf("Verify = %v, %v; want reason %s", c, err, tc.is)
			}
		})
	}
}

// mintAt is call()'s token signed with secret as of now (which may be a
// test's clock), valid for life.
func mintAt(t *testing.T, secret []byte, now time.Time, life time.Duration) string {
	t.Helper()
	key, err := calltoken.NewKey(secret)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := calltoken.Sign(key, &calltoken.Claims{Caller: alice, CallID: "c-1", Tool: "broadcast_delete", Args: calltoken.ArgsDigest(args),
		RegisteredClaims: jwt.RegisteredClaims{Issuer: calltoken.SignerGateway, Audience: jwt.ClaimStrings{"fn-delete"},
			IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(life))}})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// keyedAs signs for audience fn with the given secret: what a compromised
// function holding its own key could mint for another function.
func keyedAs(t *testing.T, fn string, secret []byte) *calltoken.Signer {
	s := calltoken.NewSigner(calltoken.SignerGateway)
	s.Add("broadcast_delete", fn, ring(t, secret), nil)
	return s
}

func strangerSigner(t *testing.T) *calltoken.Signer {
	s := calltoken.NewSigner("someone-else")
	s.Add("broadcast_delete", "fn-delete", ring(t, secretA), nil)
	return s
}

func noneToken(t *testing.T, now time.Time) string {
	c := &calltoken.Claims{Caller: alice, CallID: "c-1", Tool: "broadcast_delete", Args: calltoken.ArgsDigest(args),
		RegisteredClaims: jwt.RegisteredClaims{Issuer: calltoken.SignerGateway, Audience: jwt.ClaimStrings{"fn-delete"},
			IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Minute))}}
	tok := jwt.NewWithClaims(jwt.SigningMethodNone, c)
	tok.Header["typ"] = calltoken.TokenType
	s, err := tok.SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A rotation: the previous key verifies during its grace window and not
// after; the new key verifies from the start.
func TestRotationGraceWindow(t *testing.T) {
	prev, err := calltoken.NewKey(secretA)
	if err != nil {
		t.Fatal(err)
	}
	cur, err := calltoken.NewKey(secretB)
	if err != nil {
		t.Fatal(err)
	}
	rotatedAt := time.Now()
	clock := rotatedAt
	v := verifier(t, "fn-delete", calltoken.NewKeyring(cur, prev.Retired(rotatedAt.Add(time.Hour))), func() time.Time { return clock })
	old := mintAt(t, secretA, rotatedAt, time.Minute)
	if _, err := v.Verify(context.Background(), old, want()); err != nil {
		t.Fatalf("previous key inside its grace window: %v", err)
	}
	clock = rotatedAt.Add(time.Hour + time.Second)
	old = mintAt(t, secretA, clock, time.Minute)
	if _, err := v.Verify(context.Background(), old, want()); calltoken.ReasonOf(err) != calltoken.ReasonUnknownKey {
		t.Fatalf("previous key after its grace window: %v", err)
	}
	if _, err := v.Verify(context.Background(), mintAt(t, secretB, clock, time.Minute), want()); err != nil {
		t.Fatalf("current key: %v", err)
	}
}

// Tokens naming unknown keys reload the keyring at most once per interval,
// and only when everything else about the token is right; a real rotation is
// still picked up within one interval.
func TestUnknownKeyReloadIsRateLimited(t *testing.T) {
	var reloads atomic.Int32
	clock := time.Now()
	current := ring(t, secretA)
	v, err := calltoken.NewVerifier(calltoken.VerifierConfig{
		Audience: "fn-delete", Keyring: current, Now: func() time.Time { return clock },
		RefreshInterval: 30 * time.Second,
		Reload: func(context.Context) (*calltoken.Keyring, error) {
			reloads.Add(1)
			return current, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	c := call()
	c.Expires = clock.Add(10 * time.Minute)
	// Flood: valid-looking tokens for other functions, and for this one with
	// unknown keys.
	for i := range 50 {
		wrongAud := sign(t, keyedAs(t, "fn-other", secretB), c)
		if _, err := v.Verify(context.Background(), wrongAud, want()); calltoken.ReasonOf(err) != calltoken.ReasonAudience {
			t.Fatalf("flood %d: %v", i, err)
		}
		unknown := sign(t, keyedAs(t, "fn-delete", secretB), c)
		_, _ = v.Verify(context.Background(), unknown, want())
	}
	if n := reloads.Load(); n != 1 {
		t.Fatalf("%d reloads for a flood inside one interval; want 1", n)
	}
	// The real rotation happens; within one interval it is seen.
	current = ring(t, secretB, secretA)
	clock = clock.Add(31 * time.Second)
	rotated := sign(t, keyedAs(t, "fn-delete", secretB), c)
	if _, err := v.Verify(context.Background(), rotated, want()); err != nil {
		t.Fatalf("after the rotation: %v", err)
	}
}

func TestShortSecretsAreRefused(t *testing.T) {
	if _, err := calltoken.NewKey(make([]byte, calltoken.MinSecretBytes-1)); err == nil {
		t.Fatal("a 31-byte secret was accepted")
	}
}

// LoadKeyring against the Secrets Manager stand-in: AWSCURRENT signs,
// AWSPREVIOUS verifies within the grace window, through the real SDK.
func TestLoadKeyringFromSecretsManager(t *testing.T) {
	sm, err := secretsstandin.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer sm.Close()
	api := secretsmanager.NewFromConfig(aws.Config{
		Region: secretsstandin.Region, Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
		BaseEndpoint: aws.String(sm.URL),
	})
	arn := secretsstandin.ARN("DeleteCallKey")
	if _, err := calltoken.LoadKeyring(context.Background(), api, arn, time.Hour); err == nil {
		t.Fatal("a missing secret loaded")
	}
	sm.Put("DeleteCallKey", string(secretA))
	r1, err := calltoken.LoadKeyring(context.Background(), api, arn, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	sm.Put("DeleteCallKey", string(secretB)) // a rotation
	r2, err := calltoken.LoadKeyring(context.Background(), api, arn, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if r1.Current().ID == r2.Current().ID {
		t.Fatal("the rotation did not change the signing key")
	}
	v := verifier(t, "fn-delete", r2, nil)
	old := calltoken.NewSigner(calltoken.SignerGateway)
	old.Add("broadcast_delete", "fn-delete", r1, nil)
	if _, err := v.Verify(context.Background(), sign(t, old, call()), want()); err != nil {
		t.Fatalf("a token signed before the rotation: %v", err)
	}
	sm.Put("DeleteCallKey", "too-short")
	if _, err := calltoken.LoadKeyring(context.Background(), api, arn, time.Hour); err == nil {
		t.Fatal("a secret shorter than 32 bytes was accepted")
	}
}

func TestFunctionName(t *testing.T) {
	for in, want := range map[string]string{
		"fn":                                     "fn",
		"fn:live":                                "fn",
		"123456789012:function:fn":               "fn",
		"arn:aws:lambda:us-east-1:1:function:fn": "fn",
		"arn:aws:lambda:us-east-1:1:function:fn:live": "fn",
	} {
		if got := calltoken.FunctionName(in); got != want {
			t.Errorf("FunctionName(%q) = %q, want %q", in, got, want)
		}
	}
}

// A token names the task run it was minted for, or none: a token for a
// synchronous call cannot start (or finish) a task run, a task's token
// cannot run the call synchronously, and one task's token cannot run
// another task.
func TestTaskClaimMustMatch(t *testing.T) {
	gw := calltoken.NewSigner(calltoken.SignerGateway)
	gw.Add("broadcast_delete", "fn-delete", ring(t, secretA), nil)
	v := verifier(t, "fn-delete", ring(t, secretA), nil)
	sync := sign(t, gw, call())
	taskCall := call()
	taskCall.Task = "task-A"
	task := sign(t, gw, taskCall)
	asTask := func(id string) calltoken.Expect { w := want(); w.Task = id; return w }

	if c, err := v.Verify(context.Background(), task, asTask("task-A")); err != nil || c.Task != "task-A" {
		t.Fatalf("task token for its own task: %v, %v", c, err)
	}
	for name, tc := range map[string]struct {
		token string
		want  calltoken.Expect
	}{
		"sync token starting a task run": {sync, asTask("task-A")},
		"task token run synchronously":   {task, want()},
		"task token for another task":    {task, asTask("task-B")},
	} {
		if c, err := v.Verify(context.Background(), tc.token, tc.want); c != nil || calltoken.ReasonOf(err) != calltoken.ReasonTask {
			t.Errorf("%s: Verify = %v, %v; want %s", name, c, err, calltoken.ReasonTask)
		}
	}
}

// A token is valid for no longer than the signers ever issue (exp − iat):
// a synchronous call's for MaxCallLifetime, a task run's for
// MaxTaskLifetime. A longer one, signed with the right key, is refused, and
// the signer refuses to mint it.
func TestTokenLifetimeIsCapped(t *testing.T) {
	key, err := calltoken.NewKey(secretA)
	if err != nil {
		t.Fatal(err)
	}
	v := verifier(t, "fn-delete", ring(t, secretA), nil)
	now := time.Now()
	mint := func(task string, life time.Duration) string {
		tok, err := calltoken.Sign(key, &calltoken.Claims{Caller: alice, CallID: "c-1", Tool: "broadcast_delete", Args: calltoken.ArgsDigest(args), Task: task,
			RegisteredClaims: jwt.RegisteredClaims{Issuer: calltoken.SignerGateway, Audience: jwt.ClaimStrings{"fn-delete"},
				IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(life))}})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	asTask := want()
	asTask.Task = "task-A"
	for _, tc := range []struct {
		name string
		task string
		life time.Duration
		want calltoken.Expect
		is   calltoken.Reason
	}{
		{"call at the bound", "", calltoken.MaxCallLifetime, want(), ""},
		{"call past the bound", "", calltoken.MaxCallLifetime + time.Second, want(), calltoken.ReasonLifetime},
		{"call valid a year", "", 365 * 24 * time.Hour, want(), calltoken.ReasonLifetime},
		{"task run at the bound", "task-A", calltoken.MaxTaskLifetime, asTask, ""},
		{"task run past the bound", "task-A", calltoken.MaxTaskLifetime + time.Second, asTask, calltoken.ReasonLifetime},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := v.Verify(context.Background(), mint(tc.task, tc.life), tc.want)
			if calltoken.ReasonOf(err) != tc.is || (tc.is == "" && err != nil) {
				t.Fatalf("Verify: %v; want reason %q", err, tc.is)
			}
		})
	}
	s := keyedAs(t, "fn-delete", secretA)
	long := call()
	long.Expires = time.Now().Add(calltoken.MaxCallLifetime + time.Minute)
	if _, err := s.Sign(long); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Fatalf("the signer minted a call token valid past %s: %v", calltoken.MaxCallLifetime, err)
	}
	long.Task, long.Expires = "task-A", time.Now().Add(calltoken.MaxTaskLifetime+time.Minute)
	if _, err := s.Sign(long); err == nil {
		t.Fatalf("the signer minted a task token valid past %s", calltoken.MaxTaskLifetime)
	}
}

// A multi-round retry's input responses and request state are bound: a
// captured envelope whose elicitation answer (or state) is swapped keeps
// its token no more than one whose arguments are. The digest is canonical
// (key order, spacing), and "no responses" is not "{}".
func TestRoundClaimMustMatch(t *testing.T) {
	gw := keyedAs(t, "fn-delete", secretA)
	v := verifier(t, "fn-delete", ring(t, secretA), nil)
	ada := []byte(`{"user_name":{"action":"accept","content":{"name":"Ada"}}}`)
	c := call()
	c.InputResponses, c.RequestState = ada, "sealed-state-1"
	tok := sign(t, gw, c)
	round := func(responses string, state string) calltoken.Expect {
		w := want()
		if responses != "" {
			w.InputResponses = []byte(responses)
		}
		w.RequestState = state
		return w
	}
	if _, err := v.Verify(context.Background(), tok, round(` { "user_name" : {"content":{"name":"Ada"},"action":"accept"}}`, "sealed-state-1")); err != nil {
		t.Fatalf("the same round, re-encoded: %v", err)
	}
	for name, w := range map[string]calltoken.Expect{
		"another answer":      round(`{"user_name":{"action":"accept","content":{"name":"Eve"}}}`, "sealed-state-1"),
		"the answer declined": round(`{"user_name":{"action":"decline"}}`, "sealed-state-1"),
		"another state":       round(string(ada), "sealed-state-2"),
		"no state":            round(string(ada), ""),
		"no answers":          round("", "sealed-state-1"),
		"as a first round":    want(),
	} {
		if _, err := v.Verify(context.Background(), tok, w); calltoken.ReasonOf(err) != calltoken.ReasonRound {
			t.Errorf("%s: %v; want %s", name, err, calltoken.ReasonRound)
		}
	}
	// A first round's token does not carry answers added to its envelope.
	first := sign(t, gw, call())
	if _, err := v.Verify(context.Background(), first, round(string(ada), "")); calltoken.ReasonOf(err) != calltoken.ReasonRound {
		t.Errorf("answers added to a first round's envelope: %v", err)
	}
	if _, err := v.Verify(context.Background(), first, round("null", "")); err != nil {
		t.Errorf("null responses are none: %v", err)
	}
	if calltoken.RoundDigest([]byte("{}"), "") == calltoken.RoundDigest(nil, "") {
		t.Error("an empty object of responses digests as none")
	}
}

// Version 2 added "rnd". A version-1 token (no "ver") still verifies for a
// call without a round, where its missing claim means what it would say,
// and never for a retry; a version this function does not know is refused.
func TestTokenVersions(t *testing.T) {
	key, err := calltoken.NewKey(secretA)
	if err != nil {
		t.Fatal(err)
	}
	v := verifier(t, "fn-delete", ring(t, secretA), nil)
	now := time.Now()
	mint := func(version int) string {
		tok, err := calltoken.Sign(key, &calltoken.Claims{Caller: alice, CallID: "c-1", Tool: "broadcast_delete", Args: calltoken.ArgsDigest(args), Version: version,
			RegisteredClaims: jwt.RegisteredClaims{Issuer: calltoken.SignerGateway, Audience: jwt.ClaimStrings{"fn-delete"},
				IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Minute))}})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	retry := want()
	retry.InputResponses, retry.RequestState = []byte(`{"a":{}}`), "s"
	if _, err := v.Verify(context.Background(), mint(0), want()); err != nil {
		t.Fatalf("version 1, first round: %v", err)
	}
	if _, err := v.Verify(context.Background(), mint(0), retry); calltoken.ReasonOf(err) != calltoken.ReasonRound {
		t.Fatalf("version 1, a retry: %v; want %s", err, calltoken.ReasonRound)
	}
	for _, ver := range []int{calltoken.TokenVersion + 1, -1} {
		if _, err := v.Verify(context.Background(), mint(ver), want()); calltoken.ReasonOf(err) != calltoken.ReasonVersion {
			t.Fatalf("version %d: %v; want %s", ver, err, calltoken.ReasonVersion)
		}
	}
	c, err := v.Verify(context.Background(), sign(t, keyedAs(t, "fn-delete", secretA), call()), want())
	if err != nil || c.Version != calltoken.TokenVersion {
		t.Fatalf("a signer's token: version %v, %v", c, err)
	}
}

// TestStoredArgumentsAreBoundByTheirSHA256: arguments stored in their
// canonical form (the claim check) hash to the token's digest, so a token
// signed over the arguments verifies against the stored copy's SHA-256 and
// a token signed with that SHA-256 verifies against the arguments; any
// other SHA-256 is token_wrong_arguments.
func TestStoredArgumentsAreBoundByTheirSHA256(t *testing.T) {
	raw := []byte(` {"z": 1, "a": "<b>", "m": [1.50, {"y": null, "x": true}]} `)
	canon := calltoken.Canonical(raw)
	if !bytes.Equal(calltoken.Canonical(canon), canon) {
		t.Fatalf("Canonical is not idempotent: %s → %s", canon, calltoken.Canonical(canon))
	}
	sum := sha256.Sum256(canon)
	stored := calltoken.DigestOfSHA256(sum)
	if stored != calltoken.ArgsDigest(raw) {
		t.Fatalf("the stored copy's digest %s is not the arguments' %s", stored, calltoken.ArgsDigest(raw))
	}
	r := ring(t, secretA)
	s := calltoken.NewSigner(calltoken.SignerGateway)
	s.Add("broadcast_delete", "fn-a", r, nil)
	v := verifier(t, "fn-a", r, time.Now)

	c := call()
	c.Args = raw
	w := want()
	w.Args, w.ArgsDigest = nil, stored
	if _, err := v.Verify(t.Context(), sign(t, s, c), w); err != nil {
		t.Fatalf("a token over the arguments, checked by the stored copy's SHA-256: %v", err)
	}
	c.Args, c.ArgsDigest = nil, stored
	w = want()
	w.Args = raw
	if _, err := v.Verify(t.Context(), sign(t, s, c), w); err != nil {
		t.Fatalf("a token signed with the stored copy's SHA-256, checked by the arguments: %v", err)
	}
	other := sha256.Sum256([]byte(`{"id":"b-2"}`))
	w.Args, w.ArgsDigest = nil, calltoken.DigestOfSHA256(other)
	if _, err := v.Verify(t.Context(), sign(t, s, c), w); calltoken.ReasonOf(err) != calltoken.ReasonArguments {
		t.Fatalf("another object's SHA-256: %v, want %s", err, calltoken.ReasonArguments)
	}
}
