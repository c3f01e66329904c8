package calltoken

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// DefaultRefreshInterval is the least time between two key reloads a
// [Verifier] makes because a token named a key it does not know. A flood of
// tokens with made-up key ids costs at most one reload per interval, and a
// real rotation is seen within one interval.
const DefaultRefreshInterval = 30 * time.Second

// Verifier checks call tokens for one function. It is safe for concurrent
// use; the keyring is read without locks on the hot path.
type Verifier struct {
	audience string
	signers  []string
	ring     atomic.Pointer[Keyring]
	reload   func(context.Context) (*Keyring, error)
	skew     time.Duration
	interval time.Duration
	now      func() time.Time

	mu         sync.Mutex
	lastReload time.Time
}

// VerifierConfig configures [NewVerifier].
type VerifierConfig struct {
	// Audience is this function's name, as signers put it in "aud".
	Audience string
	// Keyring is the function's keys at start.
	Keyring *Keyring
	// Reload, when set, fetches the keys again when a token names an
	// unknown key (at most once per RefreshInterval).
	Reload func(context.Context) (*Keyring, error)
	// Signers accepted as "iss". Default: the gateway and the AgentCore
	// interceptor.
	Signers []string
	// Skew tolerated on iat/exp. Default DefaultSkew.
	Skew time.Duration
	// RefreshInterval, default DefaultRefreshInterval.
	RefreshInterval time.Duration
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
	if v.now == nil {
		v.now = time.Now
	}
	v.ring.Store(cfg.Keyring)
	return v, nil
}

// Keyring returns the keys the verifier holds now.
func (v *Verifier) Keyring() *Keyring { return v.ring.Load() }

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
	kid := t.header.Kid
	key, ok := v.ring.Load().lookup(kid, now)
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

// reloadFor fetches the keys again, at most once per interval, and looks kid
// up in what it got.
func (v *Verifier) reloadFor(ctx context.Context, kid string, now time.Time) (Key, bool) {
	if v.reload == nil {
		return Key{}, false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	// Another call may have reloaded while this one waited.
	if k, ok := v.ring.Load().lookup(kid, now); ok {
		return k, true
	}
	if !v.lastReload.IsZero() && now.Sub(v.lastReload) < v.interval {
		return Key{}, false
	}
	v.lastReload = now
	ring, err := v.reload(ctx)
	if err != nil || ring == nil {
		return Key{}, false
	}
	v.ring.Store(ring)
	return ring.lookup(kid, now)
}
