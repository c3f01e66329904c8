package iam_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/mcpfn/mcpfn/internal/iam"
)

// s3Path escapes an object key as the S3 client does: each byte but the
// unreserved ones and "/" percent-encoded.
func s3Path(bucket, key string) string {
	var b strings.Builder
	for _, c := range []byte(bucket + "/" + key) {
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', strings.IndexByte("-_.~/", c) >= 0:
			b.WriteByte(c)
		default:
			b.WriteString("%" + strings.ToUpper(string("0123456789abcdef"[c>>4])+string("0123456789abcdef"[c&15])))
		}
	}
	return "/" + b.String()
}

func sdkCreds(c iam.Credentials) aws.Credentials {
	return aws.Credentials{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey, SessionToken: c.SessionToken}
}

func s3Options(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }

// s3Signed is an S3 request signed by the SDK's signer as the S3 client
// signs (the path not escaped again), as a server receives it.
func s3Signed(t *testing.T, creds iam.Credentials, method, target, payloadHash string, at time.Time, header http.Header) *http.Request {
	t.Helper()
	r := httptest.NewRequest(method, target, nil)
	for k, v := range header {
		r.Header[k] = v
	}
	r.Header.Set("X-Amz-Content-Sha256", payloadHash)
	if creds.SessionToken != "" {
		r.Header.Set("X-Amz-Security-Token", creds.SessionToken)
	}
	out := r.Clone(context.Background())
	out.URL.Scheme, out.URL.Host = "https", r.Host
	if err := v4.NewSigner(s3Options).SignHTTP(context.Background(), sdkCreds(creds), out, payloadHash, "s3", "us-east-1", at); err != nil {
		t.Fatal(err)
	}
	r.Header = out.Header
	return r
}

// presigned is a presigned GET URL for target valid for expires from at,
// signed by the SDK's signer, and the request a server gets for it.
func presigned(t *testing.T, creds iam.Credentials, target string, expires time.Duration, at time.Time) string {
	t.Helper()
	r, err := http.NewRequest(http.MethodGet, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	q := r.URL.Query()
	q.Set("X-Amz-Expires", strconv.Itoa(int(expires/time.Second)))
	r.URL.RawQuery = q.Encode()
	u, _, err := v4.NewSigner(s3Options).PresignHTTP(context.Background(), sdkCreds(creds), r, iam.UnsignedPayload, "s3", "us-east-1", at)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func received(method, u string) *http.Request { return httptest.NewRequest(method, u, nil) }

// TestS3SignaturesOfTheSDKVerify: requests the S3 client signs — keys with
// spaces, slashes, unicode and reserved characters, a declared body hash
// or UNSIGNED-PAYLOAD, query parameters — verify, and report the payload
// hash they declared.
func TestS3SignaturesOfTheSDKVerify(t *testing.T) {
	a, id := authority(t)
	for _, key := range []string{"tool/results/c1/a1", "a b/ü+é=&?#x", "deep/../path/~x", "trailing/"} {
		for _, hash := range []string{"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", iam.UnsignedPayload, "STREAMING-UNSIGNED-PAYLOAD-TRAILER"} {
			target := "https://127.0.0.1:8084" + s3Path("payloadsbucket", key) + "?x-id=PutObject"
			r := s3Signed(t, id.Credentials, http.MethodPut, target, hash, time.Now(), http.Header{"X-Amz-Checksum-Sha256": {"abc="}})
			got, sig, err := a.AuthenticateS3(r)
			if err != nil {
				t.Fatalf("%q %s: %v", key, hash, err)
			}
			if got != id || sig.Presigned || sig.PayloadHash != hash {
				t.Fatalf("%q: authenticated as %v, %+v", key, got, sig)
			}
		}
	}
}

// TestPresignedURLsExpire: a presigned GET verifies until X-Amz-Date +
// X-Amz-Expires and not one second after, nor when dated more than 15
// minutes ahead; X-Amz-Expires is at most a week.
func TestPresignedURLsExpire(t *testing.T) {
	a, id := authority(t)
	signedAt := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	u := presigned(t, id.Credentials, "https://127.0.0.1:8084/payloadsbucket/tool/results/c1/a1", 60*time.Second, signedAt)
	for _, tc := range []struct {
		now  time.Time
		want iam.Failure
	}{
		{signedAt, 0},
		{signedAt.Add(60 * time.Second), 0},
		{signedAt.Add(61 * time.Second), iam.FailExpired},
		{signedAt.Add(-14 * time.Minute), 0},
		{signedAt.Add(-16 * time.Minute), iam.FailNotYetValid},
	} {
		a.SetClock(func() time.Time { return tc.now })
		got, sig, err := a.AuthenticateS3(received(http.MethodGet, u))
		switch {
		case tc.want == 0 && err != nil:
			t.Errorf("at %v: %v", tc.now.Sub(signedAt), err)
		case tc.want == 0 && (got != id || !sig.Presigned || sig.PayloadHash != iam.UnsignedPayload || !sig.Expires.Equal(signedAt.Add(time.Minute))):
			t.Errorf("at %v: %v %+v", tc.now.Sub(signedAt), got, sig)
		case tc.want != 0 && (err == nil || err.Failure != tc.want):
			t.Errorf("at %v: %v, want failure %d", tc.now.Sub(signedAt), err, tc.want)
		}
	}
	a.SetClock(func() time.Time { return signedAt })
	week := presigned(t, id.Credentials, "https://127.0.0.1:8084/b/k", 604800*time.Second, signedAt)
	if _, _, err := a.AuthenticateS3(received(http.MethodGet, week)); err != nil {
		t.Errorf("a week: %v", err)
	}
	longer := presigned(t, id.Credentials, "https://127.0.0.1:8084/b/k", 604801*time.Second, signedAt)
	if _, _, err := a.AuthenticateS3(received(http.MethodGet, longer)); err == nil || err.Failure != iam.FailExpires || err.Code != "AuthorizationQueryParametersError" {
		t.Errorf("a week and a second: %v", err)
	}
}

// TestTamperedS3RequestsAreRefused: a presigned URL with another key,
// method, expiry or host, or a signature of another key, does not verify;
// an x-amz header added after signing is refused as S3 refuses it; a
// header-signed request must declare its payload hash.
func TestTamperedS3RequestsAreRefused(t *testing.T) {
	a, id := authority(t)
	now := time.Now()
	u := presigned(t, id.Credentials, "https://127.0.0.1:8084/payloadsbucket/tool/results/c1/a1", time.Hour, now)
	other := iam.NewSessionCredentials()
	tamper := func(f func(*url.URL)) string {
		p, _ := url.Parse(u)
		f(p)
		return p.String()
	}
	for name, tc := range map[string]struct {
		req  *http.Request
		want iam.Failure
	}{
		"another key": {received(http.MethodGet, tamper(func(p *url.URL) { p.Path = "/payloadsbucket/other/results/c1/a1" })), iam.FailSignature},
		"longer expiry": {received(http.MethodGet, tamper(func(p *url.URL) {
			q := p.Query()
			q.Set("X-Amz-Expires", "7200")
			p.RawQuery = q.Encode()
		})), iam.FailSignature},
		"another method": {received(http.MethodDelete, u), iam.FailSignature},
		"another host": {func() *http.Request {
			r := received(http.MethodGet, u)
			r.Host = "localhost:8084"
			return r
		}(), iam.FailSignature},
		"a signature changed": {received(http.MethodGet, tamper(func(p *url.URL) {
			q := p.Query()
			sig := []byte(q.Get("X-Amz-Signature"))
			sig[0] ^= 1
			q.Set("X-Amz-Signature", string(sig))
			p.RawQuery = q.Encode()
		})), iam.FailSignature},
		"an unknown key": {received(http.MethodGet, presigned(t, other, "https://127.0.0.1:8084/payloadsbucket/k", time.Hour, now)), iam.FailUnknownKey},
		"no session token": {received(http.MethodGet, tamper(func(p *url.URL) {
			q := p.Query()
			q.Del("X-Amz-Security-Token")
			p.RawQuery = q.Encode()
		})), iam.FailToken},
		"an x-amz header added": {func() *http.Request {
			r := received(http.MethodGet, u)
			r.Header.Set("X-Amz-Meta-Owner", "mallory")
			return r
		}(), iam.FailUnsignedHeaders},
		"anonymous": {received(http.MethodGet, "https://127.0.0.1:8084/payloadsbucket/k"), iam.FailMissing},
		"no payload hash": {func() *http.Request {
			r := s3Signed(t, id.Credentials, http.MethodGet, "https://127.0.0.1:8084/payloadsbucket/k", iam.UnsignedPayload, now, nil)
			r.Header.Del("X-Amz-Content-Sha256")
			return r
		}(), iam.FailPayloadHash},
		"the payload hash changed": {func() *http.Request {
			r := s3Signed(t, id.Credentials, http.MethodPut, "https://127.0.0.1:8084/payloadsbucket/k", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", now, nil)
			r.Header.Set("X-Amz-Content-Sha256", iam.UnsignedPayload)
			return r
		}(), iam.FailSignature},
		"a header-signed request 20 minutes old": {s3Signed(t, id.Credentials, http.MethodGet, "https://127.0.0.1:8084/payloadsbucket/k", iam.UnsignedPayload, now.Add(-20*time.Minute), nil), iam.FailSkew},
	} {
		if _, _, err := a.AuthenticateS3(tc.req); err == nil || err.Failure != tc.want {
			t.Errorf("%s: %v, want failure %d", name, err, tc.want)
		}
	}
}

// TestOtherServicesRefusePresignedURLs: a presigned URL authenticates an S3
// request only.
func TestOtherServicesRefusePresignedURLs(t *testing.T) {
	a, id := authority(t)
	u := presigned(t, id.Credentials, "http://127.0.0.1:3001/2015-03-31/functions/F/invocations", time.Hour, time.Now())
	if _, err := a.Authenticate(received(http.MethodGet, u), nil, "s3"); err == nil || err.Failure != iam.FailMalformed {
		t.Errorf("a presigned URL on the JSON path: %v", err)
	}
}

// TestAnObjectIsGovernedByItsBucketsPolicy: S3 keeps one policy per bucket;
// it decides requests on the bucket's objects.
func TestAnObjectIsGovernedByItsBucketsPolicy(t *testing.T) {
	for arn, want := range map[string]string{
		"arn:aws:s3:::b/k":              "arn:aws:s3:::b",
		"arn:aws:s3:::b/a/b/c":          "arn:aws:s3:::b",
		"arn:aws:s3:::b":                "arn:aws:s3:::b",
		"arn:aws:lambda:r:a:function:F": "arn:aws:lambda:r:a:function:F",
	} {
		if got := iam.PolicyResource(arn); got != want {
			t.Errorf("PolicyResource(%s) = %s, want %s", arn, got, want)
		}
	}
	a, id := authority(t)
	a.SetResourcePolicy("arn:aws:s3:::b", mustParse(t, iam.ResourceBased, `{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::b/*","Condition":{"Bool":{"aws:SecureTransport":"false"}}}]}`))
	id.Policies = []*iam.Policy{mustParse(t, iam.IdentityBased, `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}]}`)}
	for tls, want := range map[string]iam.Result{"true": iam.Allowed, "false": iam.ExplicitDeny} {
		ctx := iam.Context{}
		ctx.Set("aws:SecureTransport", tls)
		if _, d := a.Decide(id, "s3:GetObject", "arn:aws:s3:::b/k", ctx); d.Result != want {
			t.Errorf("SecureTransport %s: %v, want %v", tls, d.Result, want)
		}
	}
}
