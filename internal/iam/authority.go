package iam

import (
	"crypto/rand"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Credentials are an access key, as a role session hands them to a
// function (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN).
type Credentials struct {
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string // "" for a long-term (user) key
}

// NewSessionCredentials makes fresh temporary credentials, shaped as STS
// makes them (an ASIA… key id and a session token).
func NewSessionCredentials() Credentials {
	const upper = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	for i := range id {
		id[i] = upper[int(id[i])%len(upper)]
	}
	return Credentials{AccessKeyID: "ASIA" + string(id), SecretAccessKey: rand.Text() + rand.Text()[:14], SessionToken: rand.Text() + rand.Text() + rand.Text()}
}

// An Identity is one principal the local stack knows: its key, who it is and
// its identity policies.
type Identity struct {
	// Name is the role's or user's name, for logs.
	Name        string
	Principal   Principal
	Credentials Credentials
	Policies    []*Policy
}

// Authority authenticates requests (Signature Version 4) and decides them
// against the identities' policies and the resources' policies. It is safe
// for concurrent use.
type Authority struct {
	Region, Account string

	mu        sync.RWMutex
	byKey     map[string]*Identity
	resources map[string]*Policy // by resource ARN
	now       func() time.Time
}

// NewAuthority returns an authority for one account and region.
func NewAuthority(region, account string) *Authority {
	return &Authority{Region: region, Account: account, byKey: map[string]*Identity{}, resources: map[string]*Policy{}, now: time.Now}
}

// Add registers an identity under its access key.
func (a *Authority) Add(id *Identity) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.byKey[id.Credentials.AccessKeyID] = id
}

// SetResourcePolicy attaches a resource-based policy to the resource arn
// (nil removes it).
func (a *Authority) SetResourcePolicy(arn string, p *Policy) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if p == nil {
		delete(a.resources, arn)
		return
	}
	a.resources[arn] = p
}

// ResourcePolicy returns the policy that governs arn, if any: the one
// attached to it, or for an S3 object the policy of its bucket.
func (a *Authority) ResourcePolicy(arn string) *Policy {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.resources[PolicyResource(arn)]
}

// PolicyResource is the resource whose resource-based policy governs arn:
// arn itself, but the bucket for an S3 object (arn:aws:s3:::bucket/key),
// since S3 keeps one policy per bucket.
func PolicyResource(arn string) string {
	if rest, ok := strings.CutPrefix(arn, "arn:aws:s3:::"); ok {
		bucket, _, _ := strings.Cut(rest, "/")
		return "arn:aws:s3:::" + bucket
	}
	return arn
}

// SetClock replaces the authority's clock (time.Now), against which
// signatures' dates and presigned URLs' expiry are checked.
func (a *Authority) SetClock(now func() time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.now = now
}

// Now is the authority's time.
func (a *Authority) Now() time.Time {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.now()
}

// Authenticate verifies r's signature for service (the signing name:
// dynamodb, secretsmanager, lambda) and returns who signed it. body is the
// request's whole body, already read.
func (a *Authority) Authenticate(r *http.Request, body []byte, service string) (*Identity, *AuthError) {
	var found *Identity
	_, err := verify(r, body, service, a.Region, a.Now(), a.lookup(&found))
	if err != nil {
		return nil, err
	}
	return found, nil
}

func (a *Authority) lookup(found **Identity) func(string) (Credentials, bool) {
	return func(keyID string) (Credentials, bool) {
		a.mu.RLock()
		defer a.mu.RUnlock()
		*found = a.byKey[keyID]
		if *found == nil {
			return Credentials{}, false
		}
		return (*found).Credentials, true
	}
}

// S3Signature is how an S3 request was signed.
type S3Signature struct {
	// Presigned: the signature is in the query string (a presigned URL),
	// not in an Authorization header.
	Presigned bool
	// PayloadHash is the body's hash the signature covers: the hex
	// SHA-256 of the body, UNSIGNED-PAYLOAD (a presigned URL's, or a body
	// the signature does not cover), or a STREAMING-… value for an
	// aws-chunked body. The caller checks the body against it.
	PayloadHash string
	// SignedAt is X-Amz-Date; Expires, for a presigned URL, the moment it
	// stops being valid.
	SignedAt, Expires time.Time
}

// AuthenticateS3 verifies the Signature Version 4 of an S3 request, in an
// Authorization header or in the query string (a presigned URL, checked
// for expiry), and returns who signed it. The body is not read: the
// signature covers the payload hash the request declares, which the
// caller must check the body against while it reads it.
func (a *Authority) AuthenticateS3(r *http.Request) (*Identity, S3Signature, *AuthError) {
	var found *Identity
	sig, hash, err := verifyAs(r, flavour{s3: true}, "s3", a.Region, a.Now(), a.lookup(&found))
	if err != nil {
		return nil, S3Signature{}, err
	}
	at, _ := time.Parse("20060102T150405Z", sig.amzDate)
	out := S3Signature{Presigned: sig.presigned, PayloadHash: hash, SignedAt: at}
	if sig.presigned {
		out.Expires = at.Add(time.Duration(sig.expires) * time.Second)
	}
	return found, out, nil
}

// Decide evaluates id performing action on resource, with the request's own
// condition keys in ctx (nil for none); the global keys the local stack
// knows are added: aws:PrincipalArn, aws:PrincipalAccount,
// aws:PrincipalType, aws:RequestedRegion.
func (a *Authority) Decide(id *Identity, action, resource string, ctx Context) (Request, Decision) {
	c := Context{}
	for k, v := range ctx {
		c[k] = v
	}
	c.Set("aws:PrincipalArn", id.Principal.IAMARN)
	c.Set("aws:PrincipalAccount", id.Principal.Account)
	typ := "User"
	if strings.Contains(id.Principal.ARN, ":assumed-role/") {
		typ = "AssumedRole"
	}
	c.Set("aws:PrincipalType", typ)
	c.Set("aws:RequestedRegion", a.Region)
	req := Request{Principal: id.Principal, Action: action, Resource: resource, Context: c}
	return req, Evaluate(req, id.Policies, a.ResourcePolicy(resource))
}

// GlobalKeys are the global condition keys [Authority.Decide] supplies.
var GlobalKeys = []string{"aws:PrincipalArn", "aws:PrincipalAccount", "aws:PrincipalType", "aws:RequestedRegion"}
