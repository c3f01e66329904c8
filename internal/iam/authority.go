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

// ResourcePolicy returns the policy attached to arn, if any.
func (a *Authority) ResourcePolicy(arn string) *Policy {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.resources[arn]
}

// Authenticate verifies r's signature for service (the signing name:
// dynamodb, secretsmanager, lambda) and returns who signed it. body is the
// request's whole body, already read.
func (a *Authority) Authenticate(r *http.Request, body []byte, service string) (*Identity, *AuthError) {
	var found *Identity
	_, err := verify(r, body, service, a.Region, a.now(), func(keyID string) (Credentials, bool) {
		a.mu.RLock()
		defer a.mu.RUnlock()
		found = a.byKey[keyID]
		if found == nil {
			return Credentials{}, false
		}
		return found.Credentials, true
	})
	if err != nil {
		return nil, err
	}
	return found, nil
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
