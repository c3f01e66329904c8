package calltoken

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"time"
	"unsafe"

	"github.com/golang-jwt/jwt/v5"
	segjson "github.com/segmentio/encoding/json"
)

// The verifier reads a token's segments itself (base64url, then JSON with
// the adapter's decoder) and checks the HMAC with the standard library
// (Key.verifyHS256: crypto/hmac, constant-time compare, a pooled keyed hash):
// golang-jwt's generic claims decoding was half of a call's allocations.
// Signing stays entirely golang-jwt's.

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
	Task   string    `json:"task"`
	Rnd    string    `json:"rnd"`
	Ver    int       `json:"ver"`
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
// The three segments are decoded into one buffer that nothing else holds;
// the decoded strings share it rather than copying (segmentio's
// DontCopyString), so that a token costs a handful of allocations.
func parseToken(token string) (parsed, error) {
	h, rest, ok1 := strings.Cut(token, ".")
	p, s, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || strings.Contains(s, ".") {
		return parsed{}, errNotJWT
	}
	enc := base64.RawURLEncoding
	buf := make([]byte, enc.DecodedLen(len(h))+enc.DecodedLen(len(p))+enc.DecodedLen(len(s)))
	nh, err1 := enc.Decode(buf, readOnlyBytes(h))
	np, err2 := enc.Decode(buf[nh:], readOnlyBytes(p))
	ns, err3 := enc.Decode(buf[nh+np:], readOnlyBytes(s))
	if err1 != nil || err2 != nil || err3 != nil {
		return parsed{}, errNotJWT
	}
	hb, pb := buf[:nh:nh], buf[nh:nh+np:nh+np]
	out := parsed{signed: token[:len(h)+1+len(p)], signature: buf[nh+np : nh+np+ns : nh+np+ns]}
	if parseJSON(hb, &out.header) != nil {
		return parsed{}, errNotJWT
	}
	var w wireClaims
	if parseJSON(pb, &w) != nil {
		return parsed{}, errNotJWT
	}
	c := &out.claims
	c.Caller, c.CallID, c.Tool, c.Args, c.Task, c.Round, c.Version = w.Caller, w.CallID, w.Tool, w.Args, w.Task, w.Rnd, w.Ver
	c.Issuer, c.Audience = w.Iss, jwt.ClaimStrings(w.Aud)
	if w.Iat != nil || w.Exp != nil || w.Nbf != nil {
		d := new([3]jwt.NumericDate) // one allocation for the three dates
		c.IssuedAt, c.ExpiresAt, c.NotBefore = numericDate(&d[0], w.Iat), numericDate(&d[1], w.Exp), numericDate(&d[2], w.Nbf)
	}
	return out, nil
}

// readOnlyBytes is s's bytes without a copy; Decode only reads its source.
func readOnlyBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// parseJSON is json.Unmarshal whose strings share b.
func parseJSON(b []byte, v any) error {
	r, err := segjson.Parse(b, v, segjson.DontCopyString)
	if err == nil && len(r) != 0 {
		return errNotJWT
	}
	return err
}

// numericDate sets d to f (as jwt.NewNumericDate would) and returns it; nil
// for an absent claim.
func numericDate(d *jwt.NumericDate, f *float64) *jwt.NumericDate {
	if f == nil {
		return nil
	}
	sec := int64(*f)
	d.Time = time.Unix(sec, int64((*f-float64(sec))*1e9)).Truncate(jwt.TimePrecision)
	return d
}
