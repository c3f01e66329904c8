package calltoken

// Identity is a caller the signer verified (a JWT's claims or an IAM
// principal). It travels only inside a signed call token; a tool function
// reads it from the verified claims, never from anything else in a payload.
type Identity struct {
	Subject    string `json:"subject"`
	AuthMethod string `json:"authMethod"` // "jwt", "iam"
	ClientID   string `json:"clientId,omitempty"`
	// RoleSession is the session name of an assumed IAM role: chosen by
	// whoever assumed the role, so attribution, never identity (Subject is
	// the role).
	RoleSession string   `json:"roleSession,omitempty"`
	Issuer      string   `json:"issuer,omitempty"`
	Scopes      []string `json:"scopes,omitempty"`
	Tenant      string   `json:"tenant,omitempty"`
	// IP and UserAgent are what the signer saw of the connection:
	// attribution, never authorization.
	IP        string `json:"ip,omitempty"`
	UserAgent string `json:"userAgent,omitempty"`
}

// HasScope reports whether the identity holds scope.
func (id *Identity) HasScope(scope string) bool {
	if id == nil {
		return false
	}
	for _, s := range id.Scopes {
		if s == scope {
			return true
		}
	}
	return false
}

// Clone returns a deep copy, so that one call's identity can never be widened
// through another's shared slice.
func (id *Identity) Clone() *Identity {
	if id == nil {
		return nil
	}
	c := *id
	c.Scopes = append([]string(nil), id.Scopes...)
	return &c
}
