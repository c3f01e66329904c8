package iam

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"
)

// AuthError is a request AWS would refuse before any policy is read: no or
// a malformed signature, an unknown key, a signature that does not verify.
// Code is AWS's error code; every one is HTTP 400 on the JSON protocols and
// 403 on Lambda's REST API (the caller picks).
type AuthError struct {
	Code    string
	Message string
}

func (e *AuthError) Error() string { return e.Code + ": " + e.Message }

// The messages AWS sends with each code.
const (
	msgMissingToken = "Request is missing Authentication Token"
	msgUnknownKey   = "The security token included in the request is invalid."
	msgMismatch     = "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details."
)

// maxSkew is how far a request's X-Amz-Date may be from the server's clock.
const maxSkew = 15 * time.Minute

const algorithm = "AWS4-HMAC-SHA256"

// sigV4 is a parsed Authorization header.
type sigV4 struct {
	keyID, date, region, service string
	signedHeaders                []string
	signature                    string
}

func parseAuthorization(h string) (*sigV4, error) {
	rest, ok := strings.CutPrefix(h, algorithm+" ")
	if !ok {
		return nil, fmt.Errorf("authorization header requires the %s algorithm", algorithm)
	}
	s := &sigV4{}
	for _, part := range strings.Split(rest, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return nil, fmt.Errorf("authorization header element %q is not key=value", part)
		}
		switch k {
		case "Credential":
			f := strings.Split(v, "/")
			if len(f) != 5 || f[4] != "aws4_request" {
				return nil, fmt.Errorf("credential %q is not <key>/<date>/<region>/<service>/aws4_request", v)
			}
			s.keyID, s.date, s.region, s.service = f[0], f[1], f[2], f[3]
		case "SignedHeaders":
			s.signedHeaders = strings.Split(v, ";")
		case "Signature":
			s.signature = v
		}
	}
	if s.keyID == "" || len(s.signedHeaders) == 0 || s.signature == "" {
		return nil, fmt.Errorf("authorization header requires Credential, SignedHeaders and Signature")
	}
	return s, nil
}

// verify checks r's Signature Version 4 (header form) for service in
// region, with the body already read, against the key lookup finds.
func verify(r *http.Request, body []byte, service, region string, now time.Time, lookup func(string) (Credentials, bool)) (string, *AuthError) {
	h := r.Header.Get("Authorization")
	if h == "" {
		if r.URL.Query().Get("X-Amz-Signature") != "" {
			return "", &AuthError{"IncompleteSignatureException", "presigned (query string) requests are not served by the local stack"}
		}
		return "", &AuthError{"MissingAuthenticationTokenException", msgMissingToken}
	}
	sig, err := parseAuthorization(h)
	if err != nil {
		return "", &AuthError{"IncompleteSignatureException", err.Error()}
	}
	creds, ok := lookup(sig.keyID)
	if !ok {
		return "", &AuthError{"UnrecognizedClientException", msgUnknownKey}
	}
	if r.Header.Get("X-Amz-Security-Token") != creds.SessionToken {
		return "", &AuthError{"UnrecognizedClientException", msgUnknownKey}
	}
	amzDate := r.Header.Get("X-Amz-Date")
	t, err := time.Parse("20060102T150405Z", amzDate)
	if err != nil {
		return "", &AuthError{"IncompleteSignatureException", "the request needs a valid X-Amz-Date header (YYYYMMDD'T'HHMMSS'Z')"}
	}
	if d := now.Sub(t); d > maxSkew || d < -maxSkew {
		return "", &AuthError{"InvalidSignatureException", fmt.Sprintf("Signature expired: %s is now earlier than %s (%s - 15 min.)",
			amzDate, now.Add(-maxSkew).UTC().Format("20060102T150405Z"), now.UTC().Format("20060102T150405Z"))}
	}
	if sig.date != amzDate[:8] {
		return "", &AuthError{"InvalidSignatureException", "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '" + sig.date + "' != '" + amzDate[:8] + "', from '" + amzDate + "'."}
	}
	if sig.region != region {
		return "", &AuthError{"InvalidSignatureException", "Credential should be scoped to a valid region, not '" + sig.region + "'. "}
	}
	if sig.service != service {
		return "", &AuthError{"InvalidSignatureException", "Credential should be scoped to correct service: '" + service + "'. "}
	}
	signedHost := false
	for _, name := range sig.signedHeaders {
		if name == "host" {
			signedHost = true
		}
	}
	if !signedHost {
		return "", &AuthError{"InvalidSignatureException", "'Host' must be a 'SignedHeader' in the AWS Authorization."}
	}
	sum := sha256.Sum256(body)
	canonical := strings.Join([]string{
		r.Method,
		canonicalURI(r),
		canonicalQuery(r.URL.RawQuery),
		canonicalHeaders(r, sig.signedHeaders),
		strings.Join(sig.signedHeaders, ";"),
		hex.EncodeToString(sum[:]),
	}, "\n")
	scope := sig.date + "/" + region + "/" + service + "/aws4_request"
	crSum := sha256.Sum256([]byte(canonical))
	toSign := algorithm + "\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(crSum[:])
	key := hmacSHA256([]byte("AWS4"+creds.SecretAccessKey), sig.date)
	key = hmacSHA256(key, region)
	key = hmacSHA256(key, service)
	key = hmacSHA256(key, "aws4_request")
	want := hex.EncodeToString(hmacSHA256(key, toSign))
	if !hmac.Equal([]byte(want), []byte(sig.signature)) {
		return "", &AuthError{"InvalidSignatureException", msgMismatch}
	}
	return sig.keyID, nil
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

// canonicalURI is the path as the client sent it, URI-encoded once more,
// as every AWS service but S3 signs it.
func canonicalURI(r *http.Request) string {
	p := r.RequestURI
	if i := strings.IndexByte(p, '?'); i >= 0 {
		p = p[:i]
	}
	if p == "" || strings.HasPrefix(p, "http") { // an absolute-form request
		p = r.URL.EscapedPath()
	}
	if p == "" {
		return "/"
	}
	return uriEncode(p, false)
}

// canonicalQuery sorts the decoded parameters and encodes each name and
// value.
func canonicalQuery(raw string) string {
	if raw == "" {
		return ""
	}
	vals, err := url.ParseQuery(raw)
	if err != nil {
		return raw // cannot match a correctly signed request
	}
	type kv struct{ k, v string }
	var pairs []kv
	for k, vs := range vals {
		for _, v := range vs {
			pairs = append(pairs, kv{uriEncode(k, true), uriEncode(v, true)})
		}
	}
	sort.Slice(pairs, func(i, j int) bool {
		if pairs[i].k != pairs[j].k {
			return pairs[i].k < pairs[j].k
		}
		return pairs[i].v < pairs[j].v
	})
	parts := make([]string, len(pairs))
	for i, p := range pairs {
		parts[i] = p.k + "=" + p.v
	}
	return strings.Join(parts, "&")
}

func canonicalHeaders(r *http.Request, names []string) string {
	var b strings.Builder
	for _, name := range names {
		var v string
		switch name {
		case "host":
			v = r.Host
		case "content-length":
			v = r.Header.Get("Content-Length")
			if v == "" && r.ContentLength >= 0 {
				v = fmt.Sprint(r.ContentLength)
			}
		default:
			v = strings.Join(r.Header.Values(name), ",")
		}
		b.WriteString(name)
		b.WriteByte(':')
		b.WriteString(strings.Join(strings.Fields(v), " "))
		b.WriteByte('\n')
	}
	return b.String()
}

// uriEncode percent-encodes every byte but the unreserved characters (and
// '/' when encoding a path), with upper-case hex digits.
func uriEncode(s string, encodeSlash bool) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_', c == '.', c == '~':
			b.WriteByte(c)
		case c == '/' && !encodeSlash:
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&15])
		}
	}
	return b.String()
}
