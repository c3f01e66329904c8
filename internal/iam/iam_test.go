package iam_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/mcpfn/mcpfn/internal/iam"
)

// signed is a request signed by the AWS SDK's own signer, as received by a
// server (RequestURI set, Host promoted).
func signed(t *testing.T, creds iam.Credentials, method, target, service string, body []byte, at time.Time) *http.Request {
	t.Helper()
	r := httptest.NewRequest(method, target, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/x-amz-json-1.0")
	if creds.SessionToken != "" {
		r.Header.Set("X-Amz-Security-Token", creds.SessionToken)
	}
	out := r.Clone(context.Background())
	out.URL.Scheme, out.URL.Host = "http", r.Host
	sum := sha256.Sum256(body)
	err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: creds.AccessKeyID, SecretAccessKey: creds.SecretAccessKey, SessionToken: creds.SessionToken},
		out, hex.EncodeToString(sum[:]), service, "us-east-1", at)
	if err != nil {
		t.Fatal(err)
	}
	r.Header = out.Header
	r.Body = io.NopCloser(bytes.NewReader(body))
	return r
}

func authority(t *testing.T) (*iam.Authority, *iam.Identity) {
	t.Helper()
	a := iam.NewAuthority("us-east-1", "000000000000")
	id := &iam.Identity{Name: "R", Principal: iam.SessionPrincipal("arn:aws:iam::000000000000:role/R", "R"), Credentials: iam.NewSessionCredentials()}
	a.Add(id)
	return a, id
}

func TestSignaturesOfTheSDKVerify(t *testing.T) {
	a, id := authority(t)
	body := []byte(`{"TableName":"AuditTable"}`)
	for _, target := range []string{
		"http://127.0.0.1:8000/",
		"http://127.0.0.1:3001/2015-03-31/functions/BroadcastGetFunction/invocations",
		"http://127.0.0.1:3001/2015-03-31/functions/arn%3Aaws%3Alambda%3Aus-east-1%3A000000000000%3Afunction%3ABroadcastGetFunction/invocations?Qualifier=%24LATEST",
		"http://localhost:3001/2015-03-31/functions/a%20b/invocations?b=2&a=1&a=0&c=x%2Fy",
	} {
		r := signed(t, id.Credentials, http.MethodPost, target, "lambda", body, time.Now())
		got, err := a.Authenticate(r, body, "lambda")
		if err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		if got != id {
			t.Fatalf("%s: authenticated as %v", target, got)
		}
	}
}

func TestBadSignaturesAreRefusedAsAWSRefusesThem(t *testing.T) {
	a, id := authority(t)
	body := []byte(`{"TableName":"AuditTable"}`)
	const target = "http://127.0.0.1:8000/"
	unknown := iam.NewSessionCredentials()
	wrongSecret := id.Credentials
	wrongSecret.SecretAccessKey = "not-" + wrongSecret.SecretAccessKey
	noToken := id.Credentials
	noToken.SessionToken = ""
	cases := []struct {
		name string
		req  func() *http.Request
		code string
	}{
		{"unsigned", func() *http.Request { return httptest.NewRequest(http.MethodPost, target, bytes.NewReader(body)) }, "MissingAuthenticationTokenException"},
		{"unknown key", func() *http.Request { return signed(t, unknown, http.MethodPost, target, "dynamodb", body, time.Now()) }, "UnrecognizedClientException"},
		{"wrong secret", func() *http.Request {
			return signed(t, wrongSecret, http.MethodPost, target, "dynamodb", body, time.Now())
		}, "InvalidSignatureException"},
		{"no session token", func() *http.Request { return signed(t, noToken, http.MethodPost, target, "dynamodb", body, time.Now()) }, "UnrecognizedClientException"},
		{"another service's scope", func() *http.Request {
			return signed(t, id.Credentials, http.MethodPost, target, "lambda", body, time.Now())
		}, "InvalidSignatureException"},
		{"expired", func() *http.Request {
			return signed(t, id.Credentials, http.MethodPost, target, "dynamodb", body, time.Now().Add(-20*time.Minute))
		}, "InvalidSignatureException"},
		{"body changed after signing", func() *http.Request {
			r := signed(t, id.Credentials, http.MethodPost, target, "dynamodb", []byte(`{"TableName":"Other"}`), time.Now())
			return r
		}, "InvalidSignatureException"},
		{"host changed", func() *http.Request {
			r := signed(t, id.Credentials, http.MethodPost, target, "dynamodb", body, time.Now())
			r.Host = "127.0.0.1:8001"
			return r
		}, "InvalidSignatureException"},
		{"malformed", func() *http.Request {
			r := signed(t, id.Credentials, http.MethodPost, target, "dynamodb", body, time.Now())
			r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=x")
			return r
		}, "IncompleteSignatureException"},
	}
	for _, c := range cases {
		_, err := a.Authenticate(c.req(), body, "dynamodb")
		if err == nil || err.Code != c.code {
			t.Errorf("%s: got %v, want %s", c.name, err, c.code)
		}
	}
}

func mustParse(t *testing.T, kind iam.Kind, doc string) *iam.Policy {
	t.Helper()
	p, err := iam.ParsePolicy("test", kind, doc)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestWhatIsNotEvaluatedIsRefusedByName(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:*","Resource":"arn:aws:s3:::${aws:username}/*"}]}`, "policy variable"},
		{`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:*","Resource":"*","Condition":{"NumericLessThan":{"s3:max-keys":"10"}}}]}`, "NumericLessThan"},
		{`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:*","Resource":"*","Condition":{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}}]}`, "IpAddress"},
		{`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"dynamodb:*","Resource":"*","Condition":{"StringLike":{"dynamodb:LeadingKeys":"a#*"}}}]}`, "multivalued key dynamodb:LeadingKeys"},
		{`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"dynamodb:*","Resource":"*","Condition":{"ForAllValues:StringEquals":{"aws:PrincipalArn":"x"}}}]}`, "set operator"},
		{`{"Version":"2012-10-17","Statement":[{"Effect":"Deny","NotPrincipal":{"AWS":"x"},"Action":"s3:*","Resource":"*"}]}`, "NotPrincipal"},
	} {
		_, err := iam.ParsePolicy("p", iam.IdentityBased, c.doc)
		var u *iam.UnsupportedError
		if !errors.As(err, &u) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an UnsupportedError naming %q", c.doc, err, c.want)
		}
	}
	// Malformed documents are errors too, of another kind.
	for _, doc := range []string{
		`{"Statement":[{"Effect":"Allow","Action":"s3:*"}]}`,
		`{"Statement":[{"Effect":"Maybe","Action":"s3:*","Resource":"*"}]}`,
		`{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"*"}]}`,
		`{"Statement":[{"Effect":"Allow","Action":"GetItem","Resource":"*"}]}`,
	} {
		if _, err := iam.ParsePolicy("p", iam.IdentityBased, doc); err == nil {
			t.Errorf("%s: parsed", doc)
		}
	}
}

// TestUnknownValuesFailClosed: a request whose key could not be derived is
// never allowed by an Allow conditioned on it, and denied by a Deny that
// is.
func TestUnknownValuesFailClosed(t *testing.T) {
	_, id := authority(t)
	allow := mustParse(t, iam.IdentityBased, `{"Version":"2012-10-17","Statement":[
		{"Effect":"Allow","Action":"dynamodb:Query","Resource":"*","Condition":{"ForAllValues:StringLike":{"dynamodb:LeadingKeys":"*"}}}]}`)
	broad := mustParse(t, iam.IdentityBased, `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"*","Resource":"*"}]}`)
	deny := mustParse(t, iam.IdentityBased, `{"Version":"2012-10-17","Statement":[
		{"Effect":"Deny","Action":"dynamodb:Query","Resource":"*","Condition":{"ForAnyValue:StringEquals":{"dynamodb:LeadingKeys":"never"}}}]}`)
	ctx := iam.Context{}
	ctx.SetUnknown("dynamodb:LeadingKeys", "a Query of an index")
	req := iam.Request{Principal: id.Principal, Action: "dynamodb:Query", Resource: "arn:aws:dynamodb:us-east-1:000000000000:table/T/index/I", Context: ctx}
	d := iam.Evaluate(req, []*iam.Policy{allow}, nil)
	if d.Result != iam.ImplicitDeny || len(d.Unevaluable) == 0 || !strings.Contains(d.Message(req), "a Query of an index") {
		t.Fatalf("Allow on an unknown value: %+v, %s", d, d.Message(req))
	}
	if d := iam.Evaluate(req, []*iam.Policy{broad, deny}, nil); d.Result != iam.ExplicitDeny {
		t.Fatalf("Deny on an unknown value: %+v", d)
	}
	// A statement that does not look at the key is decided as usual.
	if d := iam.Evaluate(req, []*iam.Policy{broad}, nil); d.Result != iam.Allowed {
		t.Fatalf("unconditioned Allow: %+v", d)
	}
}

func TestDenialsCarryAWSMessages(t *testing.T) {
	a, id := authority(t)
	id.Policies = []*iam.Policy{mustParse(t, iam.IdentityBased, `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"secretsmanager:GetSecretValue","Resource":"*"}]}`)}
	const secret = "arn:aws:secretsmanager:us-east-1:000000000000:secret:K"
	a.SetResourcePolicy(secret, mustParse(t, iam.ResourceBased, `{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Principal":"*","Action":"secretsmanager:GetSecretValue","Resource":"*",
		"Condition":{"StringNotEquals":{"aws:PrincipalArn":"arn:aws:iam::000000000000:role/Other"}}}]}`))
	req, d := a.Decide(id, "secretsmanager:GetSecretValue", secret, nil)
	want := "User: arn:aws:sts::000000000000:assumed-role/R/R is not authorized to perform: secretsmanager:GetSecretValue on resource: " + secret + " with an explicit deny in a resource-based policy"
	if d.Result != iam.ExplicitDeny || d.Message(req) != want {
		t.Fatalf("got %s %q\nwant %q", d.Result, d.Message(req), want)
	}
	req, d = a.Decide(id, "dynamodb:GetItem", "arn:aws:dynamodb:us-east-1:000000000000:table/T", nil)
	if want := "because no identity-based policy allows the dynamodb:GetItem action"; d.Result != iam.ImplicitDeny || !strings.HasSuffix(d.Message(req), want) {
		t.Fatalf("got %s %q", d.Result, d.Message(req))
	}
}
