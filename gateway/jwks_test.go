package gateway

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/golang-jwt/jwt/v5"
	"github.com/mcpfn/mcpfn/internal/lambdatest"
)

// rotatingIssuer serves a JWKS whose keys the test changes, in process (an
// http.RoundTripper), counting fetches, so the test can run in a synctest
// bubble where time is the test's.
type rotatingIssuer struct {
	mu      sync.Mutex
	keys    map[string]*rsa.PrivateKey // published
	fetches int
}

const rotatingIssuerURL = "https://issuer.test"

func (ri *rotatingIssuer) RoundTrip(r *http.Request) (*http.Response, error) {
	ri.mu.Lock()
	ri.fetches++
	var keys []any
	for kid, k := range ri.keys {
		keys = append(keys, map[string]string{
			"kty": "RSA", "kid": kid, "alg": "RS256", "use": "sig",
			"n": base64.RawURLEncoding.EncodeToString(k.N.Bytes()),
			"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(k.E)).Bytes()),
		})
	}
	ri.mu.Unlock()
	rec := httptest.NewRecorder()
	rec.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(rec).Encode(map[string]any{"keys": keys})
	return rec.Result(), nil
}

func (ri *rotatingIssuer) publish(kid string, k *rsa.PrivateKey) {
	ri.mu.Lock()
	defer ri.mu.Unlock()
	ri.keys[kid] = k
}

func (ri *rotatingIssuer) fetchCount() int {
	ri.mu.Lock()
	defer ri.mu.Unlock()
	return ri.fetches
}

func mint(t testing.TB, method jwt.SigningMethod, key any, kid string, edit func(jwt.MapClaims)) string {
	now := time.Now()
	claims := jwt.MapClaims{"iss": rotatingIssuerURL, "aud": testAudience, "sub": "alice", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	if edit != nil {
		edit(claims)
	}
	tok := jwt.NewWithClaims(method, claims)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// list sends tools/list with a bearer token through the gateway's handler
// and returns the HTTP status.
func list(gw *Gateway, token string) int {
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	gw.ServeHTTP(rec, req)
	return rec.Code
}

func rsaKey(t testing.TB) *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestUnknownKidRefreshIsBoundedAndCannotBeStarved(t *testing.T) {
	genuine, attacker, next := rsaKey(t), rsaKey(t), rsaKey(t)
	synctest.Test(t, func(t *testing.T) {
		iss := &rotatingIssuer{keys: map[string]*rsa.PrivateKey{"k1": genuine}}
		cat := testCatalog(t)
		quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
		gw, err := New(Config{
			Tools: cat.tools(), Functions: cat.functions(), Auth: AuthJWT, Logger: quiet,
			Lambda: noInvoker{}, Signer: lambdatest.Signer(cat.functions()),
			JWT: JWTConfig{
				Issuer: rotatingIssuerURL, Audience: testAudience,
				KeyRefreshInterval: 10 * time.Second,
				HTTPClient:         &http.Client{Transport: iss},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		defer gw.Close()
		if got := list(gw, mint(t, jwt.SigningMethodRS256, genuine, "k1", nil)); got != http.StatusOK {
			t.Fatalf("genuine token: %d", got)
		}
		base := iss.fetchCount()

		// Tokens that fail a check needing no key never cost a fetch,
		// whatever their kid.
		for name, tok := range map[string]string{
			"wrong issuer":   mint(t, jwt.SigningMethodRS256, attacker, "x1", func(c jwt.MapClaims) { c["iss"] = "https://evil.test" }),
			"wrong audience": mint(t, jwt.SigningMethodRS256, attacker, "x2", func(c jwt.MapClaims) { c["aud"] = "other" }),
			"expired":        mint(t, jwt.SigningMethodRS256, attacker, "x3", func(c jwt.MapClaims) { c["exp"] = time.Now().Add(-time.Hour).Unix() }),
			"no expiry":      mint(t, jwt.SigningMethodRS256, attacker, "x4", func(c jwt.MapClaims) { delete(c, "exp") }),
			"HMAC":           mint(t, jwt.SigningMethodHS256, []byte("guess"), "x5", nil),
			"garbage":        "a.b.c",
		} {
			if got := list(gw, tok); got != http.StatusUnauthorized {
				t.Errorf("%s: %d", name, got)
			}
			if got := iss.fetchCount(); got != base {
				t.Fatalf("%s: %d JWKS fetches, want none", name, got-base)
			}
		}

		// A flood of well-formed tokens with made-up kids, all at once:
		// at most one refresh per interval, however many there are.
		var wg sync.WaitGroup
		for i := range 50 {
			wg.Go(func() {
				_ = list(gw, mint(t, jwt.SigningMethodRS256, attacker, fmt.Sprintf("forged-%d", i), nil))
			})
		}
		wg.Wait()
		if flooded := iss.fetchCount() - base; flooded > 2 {
			t.Errorf("%d JWKS fetches for a flood of 50 tokens", flooded)
		}

		// The issuer rotates while the flood goes on; the new key works
		// within one interval plus the fetch.
		stop := make(chan struct{})
		var flood sync.WaitGroup
		for i := range 4 {
			flood.Go(func() {
				for n := 0; ; n++ {
					select {
					case <-stop:
						return
					default:
					}
					_ = list(gw, mint(t, jwt.SigningMethodRS256, attacker, fmt.Sprintf("forged-%d-%d", i, n), nil))
					time.Sleep(100 * time.Millisecond)
				}
			})
		}
		time.Sleep(3 * time.Second)
		iss.publish("k2", next)
		rotated := time.Now()
		before := iss.fetchCount()
		tok := mint(t, jwt.SigningMethodRS256, next, "k2", nil)
		for list(gw, tok) != http.StatusOK {
			if time.Since(rotated) > 15*time.Second {
				t.Fatalf("the new key is still refused %v after the rotation", time.Since(rotated))
			}
			time.Sleep(time.Second)
		}
		took := time.Since(rotated)
		close(stop)
		flood.Wait()
		if n := iss.fetchCount() - before; n > int(took/(10*time.Second))+2 {
			t.Errorf("%d fetches in %v", n, took)
		}
		t.Logf("new key accepted %v after the rotation, under a flood", took)
	})
}

// noInvoker is an Invoker for tests that never forward a call.
type noInvoker struct{}

func (noInvoker) Invoke(context.Context, *lambda.InvokeInput, ...func(*lambda.Options)) (*lambda.InvokeOutput, error) {
	return nil, errors.New("no invoke expected")
}
