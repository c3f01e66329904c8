package adapter

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// CredentialNeed declares a credential a tool needs.
type CredentialNeed struct {
	Name   string   // the key the tool reads it by
	Kind   string   // e.g. "oauth2", "api-key"
	Scopes []string // what the credential must allow
}

// Credential is a resolved credential. Secret never appears in audit rows or
// logs (the sanitizer redacts the key, and the type has no String with it).
type Credential struct {
	Name    string
	Kind    string
	Secret  string
	Expires time.Time
}

// String keeps the secret out of logs and %v.
func (c Credential) String() string { return fmt.Sprintf("Credential{%s %s}", c.Name, c.Kind) }

// CredentialProvider resolves credentials for a call. Attach one with
// [WithCredentials].
type CredentialProvider interface {
	Resolve(ctx context.Context, call *Call, need CredentialNeed) (*Credential, error)
}

// ErrNoCredentials is returned by every method of a call's credentials when no
// provider is attached.
var ErrNoCredentials = errors.New("adapter: no credential provider attached to this function; pass adapter.WithCredentials(provider) to adapter.Start or adapter.New")

type boundCredentials struct {
	provider CredentialProvider
	resolved map[string]*Credential
}

// HasCredentials reports whether a real credential provider is attached.
// Branch on it for an intentional no-credential mode instead of on an error.
func (c *Call) HasCredentials() bool { return c.creds.provider != nil }

// Credential returns the credential resolved for the tool's declared need
// name. It is present only when the tool declared the need and it resolved.
func (c *Call) Credential(name string) (*Credential, bool) {
	cr, ok := c.creds.resolved[name]
	return cr, ok
}

// ResolveCredential asks the attached provider for a credential the tool did
// not declare (a need known only at run time). With no provider attached it
// fails closed with ErrNoCredentials.
func (c *Call) ResolveCredential(ctx context.Context, need CredentialNeed) (*Credential, error) {
	if !c.HasCredentials() {
		return nil, ErrNoCredentials
	}
	return c.creds.provider.Resolve(ctx, c, need)
}

// resolveCredentials is the end of step 4: the tool's declared needs,
// resolved onto the call, each under the call's deadline.
func (f *Function) resolveCredentials(ctx context.Context, call *Call) error {
	if len(f.tool.needs) == 0 {
		return nil
	}
	if !call.HasCredentials() {
		return NewError(CodeInternal, "Internal server error").WithCause(ErrNoCredentials)
	}
	resolved := make(map[string]*Credential, len(f.tool.needs))
	provider := call.creds.provider
	for _, need := range f.tool.needs {
		r, _ := bounded(ctx, call, func(ctx context.Context, call *Call) (*Credential, error) {
			return provider.Resolve(ctx, call, need)
		})
		if r.timedOut {
			return f.timeoutError(StageBeforeHandle, fmt.Errorf("resolving credential %q: %w", need.Name, r.err))
		}
		if r.err != nil {
			return fmt.Errorf("resolving credential %q: %w", need.Name, r.err)
		}
		resolved[need.Name] = r.v
	}
	call.creds.resolved = resolved
	return nil
}
