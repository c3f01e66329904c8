package adapter

import (
	"fmt"

	"github.com/mcpfn/mcpfn/calltoken"
)

// Identity is a verified caller. The adapter takes it only from a call
// token that verified (package calltoken); it is absent when the call carried
// none, and never synthesised.
type Identity = calltoken.Identity

// Caller returns a copy of the verified caller, nil when no identity was
// verified. It is set in step 1 from the call token and nothing else, so no
// hook can change who called: what a hook does to the copy stays in the
// copy.
func (c *Call) Caller() *Identity { return c.caller.Clone() }

// Tenant returns the call's tenant: the verified caller's, else Lambda's
// tenant isolation id, else "". Read-only, like [Call.Caller].
func (c *Call) Tenant() string { return c.tenant }

// UnverifiedCaller returns a copy of the caller the payload named without a
// call token that verified (an envelope's "caller", or the subject of a
// refused token), nil otherwise. It is attribution for the audit row and
// never identity: nothing may be authorized on it.
func (c *Call) UnverifiedCaller() *Identity { return c.claimed.Clone() }

// SessionKey composes the session id with the tenant and the verified
// principal, the only safe key for state kept per session: the session id
// alone is caller data, and anyone can send someone else's.
func (c *Call) SessionKey() string {
	subject := ""
	if c.caller != nil {
		subject = c.caller.Subject
	}
	return fmt.Sprintf("%q/%q/%q", c.tenant, subject, c.SessionID)
}

// checkScopes is the built-in part of the authorization gate (step 4): a
// tool that requires scopes fails closed without a verified identity.
func (f *Function) checkScopes(call *Call) error {
	if len(f.tool.scopes) == 0 {
		return nil
	}
	if call.caller == nil {
		return NewError(CodeUnauthorized, "this tool requires a verified caller").
			WithHint("call it through an authenticated gateway")
	}
	var missing []string
	for _, s := range f.tool.scopes {
		if !call.caller.HasScope(s) {
			missing = append(missing, s)
		}
	}
	if len(missing) > 0 {
		return Errorf(CodeForbidden, "the caller lacks the scope(s) this tool requires").
			WithDetails(map[string]any{"missingScopes": missing})
	}
	return nil
}
