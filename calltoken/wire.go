package calltoken

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	segjson "github.com/segmentio/encoding/json"
)

// The verifier reads a token's segments itself (base64url, then JSON with
// the adapter's decoder) and leaves the HMAC to golang-jwt: the library's
// generic claims decoding was half of a call's allocations. Signing stays
// entirely golang-jwt's.

type wireHeader struct {
	Alg string `json:"alg"`
	Kid string `json:"kid"`
	Typ string `json:"typ"`
}

type wireClaims struct {
	Caller *Identity `json:"caller"`
	CallID string    `json:"cid"`
	Tool   string    `json:"tool"`
	Args   string    `json:"args"`
	Iss    string    `json:"iss"`
	Aud    audience  `json:"aud"`
	Iat    *float64  `json:"iat"`
	Exp    *float64  `json:"exp"`
	Nbf    *float64  `json:"nbf"`
}

// audience is "aud": a string or an array of strings (RFC 7519 §4.1.3).
type audience []string

func (a *audience) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := segjson.Unmarshal(b, &s); err != nil {
			return err
		}
		*a = audience{s}
		return nil
	}
	var list []string
	if err := segjson.Unmarshal(b, &list); err != nil {
		return err
	}
	*a = list
	return nil
}

// parsed is a token split into what verification needs.
type parsed struct {
	header    wireHeader
	claims    Claims
	signed    string // header.payload: what the signature covers
	signature []byte
}

var errNotJWT = errors.New("not a JWT")

// parseToken splits and decodes a compact JWS without checking anything.
func parseToken(token string) (*parsed, error) {
	h, rest, ok1 := strings.Cut(token, ".")
	p, s, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || strings.Contains(s, ".") {
		return nil, errNotJWT
	}
	hb, err1 := base64.RawURLEncoding.DecodeString(h)
	pb, err2 := base64.RawURLEncoding.DecodeString(p)
	sig, err3 := base64.RawURLEncoding.DecodeString(s)
	if err1 != nil || err2 != nil || err3 != nil {
		return nil, errNotJWT
	}
	out := &parsed{signed: token[:len(h)+1+len(p)], signature: sig}
	if segjson.Unmarshal(hb, &out.header) != nil {
		return nil, errNotJWT
	}
	var w wireClaims
	if segjson.Unmarshal(pb, &w) != nil {
		return nil, errNotJWT
	}
	c := &out.claims
	c.Caller, c.CallID, c.Tool, c.Args = w.Caller, w.CallID, w.Tool, w.Args
	c.Issuer, c.Audience = w.Iss, jwt.ClaimStrings(w.Aud)
	c.IssuedAt, c.ExpiresAt, c.NotBefore = numericDate(w.Iat), numericDate(w.Exp), numericDate(w.Nbf)
	return out, nil
}

func numericDate(f *float64) *jwt.NumericDate {
	if f == nil {
		return nil
	}
	sec := int64(*f)
	return jwt.NewNumericDate(time.Unix(sec, int64((*f-float64(sec))*1e9)))
}
