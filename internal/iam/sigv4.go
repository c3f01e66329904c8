package iam

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// AuthError is a request AWS would refuse before any policy is read: no or
// a malformed signature, an unknown key, a signature that does not verify.
// Code is AWS's error code on the JSON protocols (every one HTTP 400 there,
// 403 on Lambda's REST API: the caller picks); S3 names its failures
// differently, so Failure says which it is.
type AuthError struct {
	Code    string
	Message string
	Failure Failure
}

func (e *AuthError) Error() string { return e.Code + ": " + e.Message }

// Failure is why a request's signature was refused.
type Failure int

const (
	// FailMissing: the request carries no signature (anonymous).
	FailMissing Failure = iota + 1
	// FailMalformed: an Authorization header or presigned query that is
	// not a complete Signature Version 4.
	FailMalformed
	// FailUnknownKey: an access key the stack did not issue.
	FailUnknownKey
	// FailToken: the session token is not the key's.
	FailToken
	// FailScope: the credential scope names another date, region or
	// service.
	FailScope
	// FailSkew: the request's X-Amz-Date is more than 15 minutes from now.
	FailSkew
	// FailSignature: the signature does not verify.
	FailSignature
	// FailUnsignedHeaders: S3 only: an x-amz-* header the signature does
	// not cover.
	FailUnsignedHeaders
	// FailPayloadHash: S3 only: a header-signed request without
	// x-amz-content-sha256.
	FailPayloadHash
	// FailExpires: a presigned URL's X-Amz-Expires is not 1 to 604800.
	FailExpires
	// FailExpired: a presigned URL used after X-Amz-Date + X-Amz-Expires.
	FailExpired
	// FailNotYetValid: a presigned URL dated more than 15 minutes ahead.
	FailNotYetValid
)

// The messages AWS sends with each code.
const (
	msgMissingToken = "Request is missing Authentication Token"
	msgUnknownKey   = "The security token included in the request is invalid."
	msgMismatch     = "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details."
)

// maxSkew is how far a request's X-Amz-Date may be from the server's clock.
const maxSkew = 15 * time.Minute

// maxPresignExpiry is the longest X-Amz-Expires S3 accepts (a week).
const maxPresignExpiry = 604800

const algorithm = "AWS4-HMAC-SHA256"

// UnsignedPayload is the payload hash of a presigned S3 URL and of an S3
// request whose body its signature does not cover.
const UnsignedPayload = "UNSIGNED-PAYLOAD"

// sigV4 is a parsed Authorization header or presigned query.
type sigV4 struct {
	keyID, date, region, service string
	signedHeaders                []string
	signature                    string
	amzDate                      string
	token                        string
	// presigned: from the query string, valid for expires seconds.
	presigned bool
	expires   int
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
			if err := s.credential(v); err != nil {
				return nil, err
			}
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

func (s *sigV4) credential(v string) error {
	f := strings.Split(v, "/")
	if len(f) != 5 || f[4] != "aws4_request" {
		return fmt.Errorf("credential %q is not <key>/<date>/<region>/<service>/aws4_request", v)
	}
	s.keyID, s.date, s.region, s.service = f[0], f[1], f[2], f[3]
	return nil
}

// parsePresigned reads a presigned URL's X-Amz-* query parameters.
func parsePresigned(q url.Values) (*sigV4, *AuthError) {
	bad := func(msg string) (*sigV4, *AuthError) {
		return nil, &AuthError{"AuthorizationQueryParametersError", msg, FailMalformed}
	}
	if q.Get("X-Amz-Algorithm") != algorithm {
		return bad("X-Amz-Algorithm only supports \"" + algorithm + "\"")
	}
	s := &sigV4{presigned: true, amzDate: q.Get("X-Amz-Date"), signature: q.Get("X-Amz-Signature"), token: q.Get("X-Amz-Security-Token")}
	if err := s.credential(q.Get("X-Amz-Credential")); err != nil {
		return bad("Error parsing the X-Amz-Credential parameter; " + err.Error())
	}
	if sh := q.Get("X-Amz-SignedHeaders"); sh != "" {
		s.signedHeaders = strings.Split(sh, ";")
	}
	if s.amzDate == "" || s.signature == "" || len(s.signedHeaders) == 0 || q.Get("X-Amz-Expires") == "" {
		return bad("Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.")
	}
	n, err := strconv.Atoi(q.Get("X-Amz-Expires"))
	switch {
	case err != nil:
		return bad("X-Amz-Expires should be a number")
	case n < 0:
		return nil, &AuthError{"AuthorizationQueryParametersError", "X-Amz-Expires must be non-negative", FailExpires}
	case n > maxPresignExpiry:
		return nil, &AuthError{"AuthorizationQueryParametersError", "X-Amz-Expires must be less than a week (in seconds) that is 604800", FailExpires}
	}
	s.expires = n
	return s, nil
}

// flavour is how a service builds the canonical request.
type flavour struct {
	// s3: the path is encoded once (not again, as every other service
	// signs it), the payload hash is what x-amz-content-sha256 says,
	// presigned URLs are served, and every x-amz-* header must be signed.
	s3 bool
	// payloadHash: the hex SHA-256 of the body (every service but S3).
	payloadHash string
}

// verify checks r's Signature Version 4 (header form) for service in
// region, with the body already read, against the key lookup finds.
func verify(r *http.Request, body []byte, service, region string, now time.Time, lookup func(string) (Credentials, bool)) (string, *AuthError) {
	sum := sha256.Sum256(body)
	sig, _, err := verifyAs(r, flavour{payloadHash: hex.EncodeToString(sum[:])}, service, region, now, lookup)
	if err != nil {
		return "", err
	}
	return sig.keyID, nil
}

// verifyAs verifies r's signature as service f signs it and returns the
// parsed signature and the payload hash it covers.
func verifyAs(r *http.Request, f flavour, service, region string, now time.Time, lookup func(string) (Credentials, bool)) (*sigV4, string, *AuthError) {
	var sig *sigV4
	h := r.Header.Get("Authorization")
	query := r.URL.Query()
	switch {
	case h != "":
		var err error
		if sig, err = parseAuthorization(h); err != nil {
			return nil, "", &AuthError{"IncompleteSignatureException", err.Error(), FailMalformed}
		}
		sig.amzDate = r.Header.Get("X-Amz-Date")
		sig.token = r.Header.Get("X-Amz-Security-Token")
	case query.Get("X-Amz-Signature") != "" || query.Get("X-Amz-Credential") != "":
		if !f.s3 {
			return nil, "", &AuthError{"IncompleteSignatureException", "presigned (query string) requests are not served by the local stack", FailMalformed}
		}
		var aerr *AuthError
		if sig, aerr = parsePresigned(query); aerr != nil {
			return nil, "", aerr
		}
	default:
		return nil, "", &AuthError{"MissingAuthenticationTokenException", msgMissingToken, FailMissing}
	}
	creds, ok := lookup(sig.keyID)
	if !ok {
		return nil, "", &AuthError{"UnrecognizedClientException", msgUnknownKey, FailUnknownKey}
	}
	if sig.token != creds.SessionToken {
		return nil, "", &AuthError{"UnrecognizedClientException", msgUnknownKey, FailToken}
	}
	t, err := time.Parse("20060102T150405Z", sig.amzDate)
	if err != nil {
		return nil, "", &AuthError{"IncompleteSignatureException", "the request needs a valid X-Amz-Date header (YYYYMMDD'T'HHMMSS'Z')", FailMalformed}
	}
	if sig.presigned {
		if t.Sub(now) > maxSkew {
			return nil, "", &AuthError{"AccessDenied", "Request is not valid yet", FailNotYetValid}
		}
		if now.After(t.Add(time.Duration(sig.expires) * time.Second)) {
			return nil, "", &AuthError{"AccessDenied", "Request has expired", FailExpired}
		}
	} else if d := now.Sub(t); d > maxSkew || d < -maxSkew {
		return nil, "", &AuthError{"InvalidSignatureException", fmt.Sprintf("Signature expired: %s is now earlier than %s (%s - 15 min.)",
			sig.amzDate, now.Add(-maxSkew).UTC().Format("20060102T150405Z"), now.UTC().Format("20060102T150405Z")), FailSkew}
	}
	if sig.date != sig.amzDate[:8] {
		return nil, "", &AuthError{"InvalidSignatureException", "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '" + sig.date + "' != '" + sig.amzDate[:8] + "', from '" + sig.amzDate + "'.", FailScope}
	}
	if sig.region != region {
		return nil, "", &AuthError{"InvalidSignatureException", "Credential should be scoped to a valid region, not '" + sig.region + "'. ", FailScope}
	}
	if sig.service != service {
		return nil, "", &AuthError{"InvalidSignatureException", "Credential should be scoped to correct service: '" + service + "'. ", FailScope}
	}
	if !slices.Contains(sig.signedHeaders, "host") {
		return nil, "", &AuthError{"InvalidSignatureException", "'Host' must be a 'SignedHeader' in the AWS Authorization.", FailMalformed}
	}
	payloadHash, rawQuery, uri := f.payloadHash, r.URL.RawQuery, canonicalURI(r)
	if f.s3 {
		for name := range r.Header {
			if n := strings.ToLower(name); strings.HasPrefix(n, "x-amz-") && !slices.Contains(sig.signedHeaders, n) &&
				!(sig.presigned && n == "x-amz-content-sha256") {
				return nil, "", &AuthError{"AccessDenied", "There were headers present in the request which were not signed", FailUnsignedHeaders}
			}
		}
		uri = s3CanonicalURI(r)
		if sig.presigned {
			payloadHash = UnsignedPayload
			rawQuery = withoutSignature(rawQuery)
		} else if payloadHash = r.Header.Get("X-Amz-Content-Sha256"); payloadHash == "" {
			return nil, "", &AuthError{"InvalidRequest", "Missing required header for this request: x-amz-content-sha256", FailPayloadHash}
		}
	}
	canonical := strings.Join([]string{
		r.Method,
		uri,
		canonicalQuery(rawQuery),
		canonicalHeaders(r, sig.signedHeaders),
		strings.Join(sig.signedHeaders, ";"),
		payloadHash,
	}, "\n")
	scope := sig.date + "/" + region + "/" + service + "/aws4_request"
	crSum := sha256.Sum256([]byte(canonical))
	toSign := algorithm + "\n" + sig.amzDate + "\n" + scope + "\n" + hex.EncodeToString(crSum[:])
	key := hmacSHA256([]byte("AWS4"+creds.SecretAccessKey), sig.date)
	key = hmacSHA256(key, region)
	key = hmacSHA256(key, service)
	key = hmacSHA256(key, "aws4_request")
	want := hex.EncodeToString(hmacSHA256(key, toSign))
	if !hmac.Equal([]byte(want), []byte(sig.signature)) {
		return nil, "", &AuthError{"InvalidSignatureException", msgMismatch, FailSignature}
	}
	return sig, payloadHash, nil
}

// withoutSignature is a presigned URL's query without X-Amz-Signature,
// which its canonical request cannot hold.
func withoutSignature(raw string) string {
	parts := strings.Split(raw, "&")
	out := parts[:0]
	for _, p := range parts {
		if !strings.HasPrefix(p, "X-Amz-Signature=") {
			out = append(out, p)
		}
	}
	return strings.Join(out, "&")
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

// s3CanonicalURI is the path as S3 signs it: each segment decoded and
// URI-encoded once, slashes kept.
func s3CanonicalURI(r *http.Request) string {
	p := r.RequestURI
	if i := strings.IndexByte(p, '?'); i >= 0 {
		p = p[:i]
	}
	if p == "" || strings.HasPrefix(p, "http") {
		p = r.URL.EscapedPath()
	}
	if p == "" {
		return "/"
	}
	segs := strings.Split(p, "/")
	for i, seg := range segs {
		if d, err := url.PathUnescape(seg); err == nil {
			seg = d
		}
		segs[i] = uriEncode(seg, true)
	}
	return strings.Join(segs, "/")
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
