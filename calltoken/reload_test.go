package calltoken_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpfn/mcpfn/calltoken"
)

var secretC = []byte("function-c-secret-0123456789abcdefghijklmnop")

// source is a function's secret as Secrets Manager serves it: the keys it
// holds now, or an outage; it counts the reads.
type source struct {
	mu    sync.Mutex
	ring  *calltoken.Keyring
	err   error
	delay time.Duration // one GetSecretValue round trip
	reads atomic.Int32
}

func (s *source) set(ring *calltoken.Keyring, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ring, s.err = ring, err
}

func (s *source) load(context.Context) (*calltoken.Keyring, error) {
	s.reads.Add(1)
	time.Sleep(s.delay)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ring, s.err
}

// warmVerifier is a function's verifier as VerifierFromEnv builds it, on
// the test's (synctest) clock: keys just loaded from src.
func warmVerifier(t *testing.T, src *source) *calltoken.Verifier {
	t.Helper()
	ring, err := src.load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	src.reads.Store(0)
	v, err := calltoken.NewVerifier(calltoken.VerifierConfig{Audience: "fn-delete", Keyring: ring, Reload: src.load})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// verify checks a fresh token signed with secret, now.
func verify(t *testing.T, v *calltoken.Verifier, secret []byte) error {
	t.Helper()
	_, err := v.Verify(context.Background(), mintAt(t, secret, time.Now(), time.Minute), want())
	return err
}

// L5: a stolen key outlived its rotation in a warm environment until a
// token named the new key. The compromised-key procedure rotates the secret
// twice, so that neither stage holds the stolen key: a warm function that
// only ever sees the thief's tokens stops accepting them within
// DefaultKeyMaxAge, and reads its secret no more than once per
// DefaultKeyMaxAge while it is busy.
func TestWarmFunctionDropsARotatedOutKeyWithinKeyMaxAge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &source{ring: ring(t, secretA), delay: 20 * time.Millisecond}
		v := warmVerifier(t, src)
		if err := verify(t, v, secretA); err != nil {
			t.Fatalf("before the rotation: %v", err)
		}
		// Rotated twice: AWSCURRENT C, AWSPREVIOUS B; A is in no stage.
		src.set(ring(t, secretC, secretB), nil)
		rotated := time.Now()
		for time.Since(rotated) < calltoken.DefaultKeyMaxAge-time.Second {
			if err := verify(t, v, secretA); err != nil {
				t.Fatalf("%s after the rotation, inside the keys' age: %v", time.Since(rotated), err)
			}
			time.Sleep(10 * time.Second)
		}
		if n := src.reads.Load(); n != 0 {
			t.Fatalf("%d reads of the secret before the keys were due", n)
		}
		time.Sleep(time.Second)
		if err := verify(t, v, secretA); calltoken.ReasonOf(err) != calltoken.ReasonUnknownKey {
			t.Fatalf("the stolen key %s after the rotation: %v; want %s", time.Since(rotated), err, calltoken.ReasonUnknownKey)
		}
		if err := verify(t, v, secretC); err != nil {
			t.Fatalf("the new key: %v", err)
		}
		// An hour of calls every 10 s: one reload per DefaultKeyMaxAge.
		src.reads.Store(0)
		for start := time.Now(); time.Since(start) < time.Hour; time.Sleep(10 * time.Second) {
			if err := verify(t, v, secretC); err != nil {
				t.Fatalf("the new key: %v", err)
			}
		}
		if n, most := src.reads.Load(), int32(time.Hour/calltoken.DefaultKeyMaxAge)+1; n > most {
			t.Fatalf("%d reads of the secret in an hour of calls; want at most %d", n, most)
		}
		// The thief's tokens, every 10 s for an hour, are all refused; as
		// tokens naming a key the function does not hold, they cost at most
		// one reload per DefaultRefreshInterval, as any made-up key id does.
		src.reads.Store(0)
		for start := time.Now(); time.Since(start) < time.Hour; time.Sleep(10 * time.Second) {
			if err := verify(t, v, secretA); calltoken.ReasonOf(err) != calltoken.ReasonUnknownKey {
				t.Fatalf("the stolen key: %v", err)
			}
		}
		if n, most := src.reads.Load(), int32(time.Hour/calltoken.DefaultRefreshInterval)+1; n > most {
			t.Fatalf("%d reads of the secret for an hour of the thief's calls; want at most %d", n, most)
		}
	})
}

// Calls arriving together when the keys are due share one reload.
func TestConcurrentCallsShareOneReload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &source{ring: ring(t, secretA), delay: 50 * time.Millisecond}
		v := warmVerifier(t, src)
		time.Sleep(calltoken.DefaultKeyMaxAge)
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for range 64 {
			wg.Go(func() { errs <- verify(t, v, secretA) })
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if n := src.reads.Load(); n != 1 {
			t.Fatalf("%d reloads for 64 concurrent calls; want 1", n)
		}
	})
}

// While Secrets Manager cannot be read, a warm function keeps its keys
// (trying again at most once per DefaultRefreshInterval) until they are
// DefaultKeyStaleLimit old; then it refuses calls, retryably, until a
// reload succeeds.
func TestUnreadableSecretStopsVerifyingAfterTheStaleLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &source{ring: ring(t, secretA)}
		v := warmVerifier(t, src)
		src.set(nil, errors.New("secrets manager: service unavailable"))
		loaded := time.Now()
		time.Sleep(calltoken.DefaultKeyMaxAge)
		for time.Since(loaded) < calltoken.DefaultKeyStaleLimit {
			if err := verify(t, v, secretA); err != nil {
				t.Fatalf("keys %s old, inside the stale limit: %v", time.Since(loaded), err)
			}
			time.Sleep(time.Second)
		}
		attempts := int32((calltoken.DefaultKeyStaleLimit-calltoken.DefaultKeyMaxAge)/calltoken.DefaultRefreshInterval) + 1
		if n := src.reads.Load(); n > attempts {
			t.Fatalf("%d reload attempts in %s of outage; want at most %d", n, calltoken.DefaultKeyStaleLimit-calltoken.DefaultKeyMaxAge, attempts)
		}
		if err := verify(t, v, secretA); calltoken.ReasonOf(err) != calltoken.ReasonKeysUnusable {
			t.Fatalf("keys %s old: %v; want %s", time.Since(loaded), err, calltoken.ReasonKeysUnusable)
		}
		src.set(ring(t, secretA), nil)
		time.Sleep(calltoken.DefaultRefreshInterval)
		if err := verify(t, v, secretA); err != nil {
			t.Fatalf("after Secrets Manager came back: %v", err)
		}
	})
}

// A verifier without a source (tests, the kit) has keys that never age.
func TestKeysWithoutASourceNeverAge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		v := verifier(t, "fn-delete", ring(t, secretA), nil)
		time.Sleep(24 * time.Hour)
		if err := verify(t, v, secretA); err != nil {
			t.Fatal(err)
		}
	})
}
