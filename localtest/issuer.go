package localtest

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net"
	"net/http"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Identity of the local developer's user and the audience its tokens are
// for. Its scopes are every scope the project's tools require
// ([Stack.Scopes]), so the READY token may call every tool.
const (
	DemoSubject  = "demo-user"
	DemoClientID = "mcpfn-local"
	Audience     = "mcpfn-local"
	tokenTTL     = 12 * time.Hour
)

// issuer is a minimal OpenID provider: a signing key generated at start, its
// JWKS and discovery document on a loopback port, and tokens minted
// in-process. The gateway verifies tokens against it exactly as against a
// real issuer (auth mode jwt), so the local path exercises the same checks.
type issuer struct {
	key    *rsa.PrivateKey
	kid    string
	url    string // the "iss" value and the base of the well-known URLs
	scopes []string
	server *http.Server
}

func startIssuer(addr string, scopes []string) (*issuer, error) {
	// 2048 bits: the smallest size the JWT libraries accept for RS256.
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	iss := &issuer{key: key, kid: rand.Text()[:16], url: "http://" + ln.Addr().String(), scopes: scopes}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/jwks.json", iss.serveJWKS)
	mux.HandleFunc("GET /.well-known/openid-configuration", iss.serveDiscovery)
	iss.server = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = iss.server.Serve(ln) }()
	return iss, nil
}

func (iss *issuer) jwksURL() string { return iss.url + "/.well-known/jwks.json" }

func (iss *issuer) serveJWKS(w http.ResponseWriter, _ *http.Request) {
	pub := iss.key.PublicKey
	b64 := base64.RawURLEncoding.EncodeToString
	writeJSON(w, map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "use": "sig", "alg": "RS256", "kid": iss.kid,
		"n": b64(pub.N.Bytes()), "e": b64(big.NewInt(int64(pub.E)).Bytes()),
	}}})
}

func (iss *issuer) serveDiscovery(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, map[string]any{
		"issuer":                                iss.url,
		"jwks_uri":                              iss.jwksURL(),
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"response_types_supported":              []string{"token"},
		"subject_types_supported":               []string{"public"},
		"scopes_supported":                      iss.scopes,
	})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// mint signs claims with the issuer's key. Unset iss, aud, iat and exp get
// the issuer, the local audience, now and now + 12 h; a claim set to nil is
// left out, so tests can build tokens without an expiry or an audience.
func (iss *issuer) mint(claims map[string]any) (string, error) {
	now := time.Now()
	c := jwt.MapClaims{
		"iss": iss.url,
		"aud": Audience,
		"iat": now.Unix(),
		"exp": now.Add(tokenTTL).Unix(),
	}
	for k, v := range claims {
		if v == nil {
			delete(c, k)
			continue
		}
		c[k] = v
	}
	t := jwt.NewWithClaims(jwt.SigningMethodRS256, c)
	t.Header["kid"] = iss.kid
	return t.SignedString(iss.key)
}

func (iss *issuer) close() error { return iss.server.Close() }
