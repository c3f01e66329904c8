package calltoken

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// DefaultRefreshInterval is the least time between two attempts to reload
// the keys: a flood of tokens with made-up key ids, or a Secrets Manager that
// keeps failing, costs at most one attempt per interval, and a real
// rotation is seen within one interval.
const DefaultRefreshInterval = 30 * time.Second

// DefaultKeyMaxAge is how long a warm function verifies with the keys it
// loaded before it reads its secret again (on the first call after that
// needs a key). It bounds how long a key the secret no longer holds — a
// stolen one, rotated out twice — still verifies in an environment that
// never sees a token naming the new key. Each reload is one concurrent pair
// of GetSecretValue calls: at most 2 per 5 minutes per busy environment
// (≈ 17,300 a month, under $0.10 at $0.05 per 10,000), and none while the
// environment is idle; cold starts are unchanged.
const DefaultKeyMaxAge = 5 * time.Minute

// DefaultKeyStaleLimit is how long a function keeps verifying with keys it
// could not reload: through a Secrets Manager outage of up to 10 minutes
// beyond DefaultKeyMaxAge a warm function goes on serving; after that it
// refuses calls (function_keys_unavailable, retryable) until a reload
// succeeds, rather than trust keys it cannot check for ever.
const DefaultKeyStaleLimit = 15 * time.Minute

// Verifier checks call tokens for one function. It is safe for concurrent
// use; the keyring is read without locks on the hot path.
type Verifier struct {
	audience   string
	signers    []string
	loaded     atomic.Pointer[loadedKeys]
	reload     func(context.Context) (*Keyring, error)
	skew       time.Duration
	interval   time.Duration
	maxAge     time.Duration
	staleLimit time.Duration
	now        func() time.Time

	// reloading is held (a value in it) by the one call that may reload;
	// a channel, so that a call waiting for another's reload can give up
	// at its own deadline.
	reloading   chan struct{}
	lastAttempt time.Time // the last reload attempt, successful or not
}

// loadedKeys is a keyring and when it was read from its source.
type loadedKeys struct {
	ring *Keyring
	at   time.Time
}

// VerifierConfig configures [NewVerifier].
type VerifierConfig struct {
	// Audience is this function's name, as signers put it in "aud".
	Audience string
	// Keyring is the function's keys at start, just loaded.
	Keyring *Keyring
	// Reload, when set, fetches the keys again: when they are KeyMaxAge
	// old, and when a token names an unknown key (at most one attempt per
	// RefreshInterval either way). Without it the keys never change and
	// never age.
	Reload func(context.Context) (*Keyring, error)
	// Signers accepted as "iss". Default: the gateway and the AgentCore
	// interceptor.
	Signers []string
	// Skew tolerated on iat/exp. Default DefaultSkew.
	Skew time.Duration
	// RefreshInterval, default DefaultRefreshInterval.
	RefreshInterval time.Duration
	// KeyMaxAge, default DefaultKeyMaxAge.
	KeyMaxAge time.Duration
	// KeyStaleLimit, default DefaultKeyStaleLimit (never below KeyMaxAge).
	KeyStaleLimit time.Duration
	// Now, for tests. Default time.Now.
	Now func() time.Time
}

// NewVerifier builds a verifier; cfg.Audience and cfg.Keyring are required.
func NewVerifier(cfg VerifierConfig) (*Verifier, error) {
	if cfg.Audience == "" || cfg.Keyring == nil {
		return nil, errors.New("calltoken: a verifier needs its function's name and keys")
	}
	v := &Verifier{
		audience: cfg.Audience, signers: cfg.Signers, reload: cfg.Reload,
		skew: cfg.Skew, interval: cfg.RefreshInterval, now: cfg.Now,
		maxAge: cfg.KeyMaxAge, staleLimit: cfg.KeyStaleLimit,
		reloading: make(chan struct{}, 1),
	}
	if len(v.signers) == 0 {
		v.signers = []string{SignerGateway, SignerInterceptor}
	}
	if v.skew <= 0 {
		v.skew = DefaultSkew
	}
	if v.interval <= 0 {
		v.interval = DefaultRefreshInterval
	}
	if v.maxAge <= 0 {
		v.maxAge = DefaultKeyMaxAge
	}
	if v.staleLimit <= 0 {
		v.staleLimit = DefaultKeyStaleLimit
	}
	v.staleLimit = max(v.staleLimit, v.maxAge)
	if v.now == nil {
		v.now = time.Now
	}
	v.loaded.Store(&loadedKeys{ring: cfg.Keyring, at: v.now()})
	return v, nil
}

// Keyring returns the keys the verifier holds now.
func (v *Verifier) Keyring() *Keyring { return v.loaded.Load().ring }

// Verify checks token for the call described by want and returns its claims.
// Every refusal is an *Error with a [Reason].
func (v *Verifier) Verify(ctx context.Context, token string, want Expect) (*Claims, error) {
	if token == "" {
		return nil, refuse(ReasonMissing, "the call carries no call token")
	}
	if len(token) > MaxTokenBytes {
		return nil, refuse(ReasonOversized, "%d bytes; at most %d", len(token), MaxTokenBytes)
	}
	now := v.now()
	// The claims first, unverified: none of these checks needs a key, and a
	// token failing them never causes a key reload.
	t, err := parseToken(token)
	if err != nil {
		return nil, refuse(ReasonMalformed, "not a JWT")
	}
	if t.header.Typ != TokenType {
		return nil, refuse(ReasonMalformed, "typ is not %s", TokenType)
	}
	// Only HS256: neither "none" nor a public key passed off as an HMAC
	// secret gets through.
	if t.header.Alg != jwt.SigningMethodHS256.Alg() {
		return nil, refuse(ReasonAlgorithm, "alg must be HS256")
	}
	c := t.claims
	if err := verifyClaims(&c, v.audience, v.signers, want, now, v.skew); err != nil {
		return nil, err
	}
	keys := v.loaded.Load()
	if v.reload != nil && now.Sub(keys.at) >= v.maxAge {
		if keys, err = v.refresh(ctx, now); err != nil {
			return nil, err
		}
	}
	kid := t.header.Kid
	key, ok := keys.ring.lookup(kid, now)
	if !ok {
		if key, ok = v.reloadFor(ctx, kid, now); !ok {
			return nil, refuse(ReasonUnknownKey, "no current key of this function has that id")
		}
	}
	// The claims checked above are the ones signed: the signature covers
	// exactly the header and payload segments that were parsed.
	if !key.verifyHS256(t.signed, t.signature) {
		return nil, refuse(ReasonSignature, "the signature does not verify")
	}
	return &c, nil
}

// refresh reloads keys that are maxAge old. While reloading fails (at most
// one attempt per interval) the keys it has keep verifying, until they are
// staleLimit old.
func (v *Verifier) refresh(ctx context.Context, now time.Time) (*loadedKeys, error) {
	if !v.lock(ctx) {
		return nil, refuse(ReasonKeysUnusable, "the call ended while the function's keys were being reloaded")
	}
	defer v.unlock()
	// Another call may have reloaded while this one waited.
	keys := v.loaded.Load()
	if now.Sub(keys.at) < v.maxAge {
		return keys, nil
	}
	if fresh := v.attempt(ctx, now); fresh != nil {
		return fresh, nil
	}
	if age := now.Sub(keys.at); age >= v.staleLimit {
		return nil, refuse(ReasonKeysUnusable, "the function's keys were read %s ago and cannot be read again now", age.Round(time.Second))
	}
	return keys, nil
}

// reloadFor fetches the keys again for a token naming kid, which the keys
// at hand do not hold, and looks kid up in what it got.
func (v *Verifier) reloadFor(ctx context.Context, kid string, now time.Time) (Key, bool) {
	if v.reload == nil {
		return Key{}, false
	}
	if !v.lock(ctx) {
		return Key{}, false
	}
	defer v.unlock()
	// Another call may have reloaded while this one waited.
	if k, ok := v.loaded.Load().ring.lookup(kid, now); ok {
		return k, true
	}
	fresh := v.attempt(ctx, now)
	if fresh == nil {
		return Key{}, false
	}
	return fresh.ring.lookup(kid, now)
}

// lock takes the right to reload, waiting for another call's reload at most
// until ctx ends.
func (v *Verifier) lock(ctx context.Context) bool {
	select {
	case v.reloading <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (v *Verifier) unlock() { <-v.reloading }

// attempt reloads the keys unless an attempt was made less than an interval
// ago; it returns the new keys, or nil. The caller holds the lock.
func (v *Verifier) attempt(ctx context.Context, now time.Time) *loadedKeys {
	if !v.lastAttempt.IsZero() && now.Sub(v.lastAttempt) < v.interval {
		return nil
	}
	v.lastAttempt = now
	ring, err := v.reload(ctx)
	if err != nil || ring == nil {
		return nil
	}
	fresh := &loadedKeys{ring: ring, at: now}
	v.loaded.Store(fresh)
	return fresh
}
