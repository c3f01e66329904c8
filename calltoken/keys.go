package calltoken

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"sync"
	"time"
)

// MinSecretBytes is the shortest secret a key is derived from. Shorter ones
// are refused at start: a key is only as strong as the secret behind it.
const MinSecretBytes = 32

// Key is one version of a function's key, derived from its secret. The
// secret itself is not kept.
type Key struct {
	// ID names the key in a token's "kid" header. It is derived from the
	// secret with HKDF, so it says nothing about the key.
	ID       string
	token    []byte
	state    []byte
	notAfter time.Time  // zero: no end; else the end of a rotation's grace window
	macs     *sync.Pool // of *macState keyed with token; nil: one per call
}

// macState is a reusable HMAC-SHA256 keyed with a Key's token secret.
type macState struct {
	h   hash.Hash
	buf []byte
	sum [sha256.Size]byte
}

// verifyHS256 checks an HS256 signature over signed, as golang-jwt's
// SigningMethodHS256.Verify does (HMAC-SHA256, constant-time compare),
// reusing the keyed HMAC between calls.
func (k Key) verifyHS256(signed string, sig []byte) bool {
	var st *macState
	if k.macs != nil {
		st = k.macs.Get().(*macState)
	} else {
		st = &macState{h: hmac.New(sha256.New, k.token)}
	}
	st.h.Reset()
	st.buf = append(st.buf[:0], signed...)
	st.h.Write(st.buf)
	ok := hmac.Equal(sig, st.h.Sum(st.sum[:0]))
	if k.macs != nil && cap(st.buf) <= MaxTokenBytes {
		k.macs.Put(st)
	}
	return ok
}

func newMACPool(token []byte) *sync.Pool {
	return &sync.Pool{New: func() any { return &macState{h: hmac.New(sha256.New, token)} }}
}

// NewKey derives a key from secret (at least [MinSecretBytes] bytes).
func NewKey(secret []byte) (Key, error) {
	if len(secret) < MinSecretBytes {
		return Key{}, fmt.Errorf("calltoken: a key secret must be at least %d bytes, got %d", MinSecretBytes, len(secret))
	}
	derive := func(purpose string, n int) []byte {
		b, err := hkdf.Key(sha256.New, secret, nil, "mcpfn "+purpose+" v1", n)
		if err != nil {
			panic(err) // only for n beyond HKDF's limit, which these are not
		}
		return b
	}
	token := derive("call token", 32)
	return Key{
		ID:    hex.EncodeToString(derive("key id", 8)),
		token: token,
		state: derive("request state", 32),
		macs:  newMACPool(token),
	}, nil
}

// Retired returns a copy of k accepted for verification only until t.
func (k Key) Retired(t time.Time) Key {
	k.notAfter = t
	return k
}

// usable reports whether k may still verify a token at now.
func (k Key) usable(now time.Time) bool { return k.notAfter.IsZero() || now.Before(k.notAfter) }

// Keyring is a function's current key and the previous keys still inside
// their grace window. It is immutable once built.
type Keyring struct {
	keys []Key // keys[0] signs
}

// NewKeyring holds current (which signs) and previous keys (which only
// verify, each until its own retirement).
func NewKeyring(current Key, previous ...Key) *Keyring {
	return &Keyring{keys: append([]Key{current}, previous...)}
}

// KeyringFromSecrets derives a keyring from raw secrets, the current one
// first. Convenience for tests and the local stack.
func KeyringFromSecrets(current []byte, previous ...[]byte) (*Keyring, error) {
	cur, err := NewKey(current)
	if err != nil {
		return nil, err
	}
	ring := &Keyring{keys: []Key{cur}}
	for _, p := range previous {
		k, err := NewKey(p)
		if err != nil {
			return nil, err
		}
		ring.keys = append(ring.keys, k)
	}
	return ring, nil
}

// Current returns the key that signs.
func (r *Keyring) Current() Key { return r.keys[0] }

// lookup finds the key named kid that is usable at now.
func (r *Keyring) lookup(kid string, now time.Time) (Key, bool) {
	for _, k := range r.keys {
		if k.ID == kid && k.usable(now) {
			return k, true
		}
	}
	return Key{}, false
}

// StateKeys returns the keys that seal multi-round request state: the
// current one first (it seals), then the previous ones (they still open
// state sealed before a rotation).
func (r *Keyring) StateKeys(now time.Time) [][]byte {
	out := make([][]byte, 0, len(r.keys))
	for _, k := range r.keys {
		if k.usable(now) {
			out = append(out, k.state)
		}
	}
	return out
}
