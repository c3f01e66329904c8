package audit

import (
	"errors"
	"net/url"
	"strings"
)

// Caller names one verified principal: the same subject from another
// issuer, auth method or tenant is another principal.
type Caller struct {
	AuthMethod string // "jwt", "iam", …
	Issuer     string // the token's iss; "aws:iam" for IAM callers
	Tenant     string
	Subject    string
}

// Key is the caller's byCaller index key:
//
//	<authMethod>#<issuer>#<tenant>#<subject>
//
// with '%' and '#' inside each part percent-escaped (%25, %23), so no two
// callers share a key and the key splits back into its parts (see
// [ParseCallerKey]). An empty part stays empty: "jwt###user-7".
func (c Caller) Key() string {
	return escapePart(c.AuthMethod) + "#" + escapePart(c.Issuer) + "#" + escapePart(c.Tenant) + "#" + escapePart(c.Subject)
}

var partEscaper = strings.NewReplacer("%", "%25", "#", "%23")

func escapePart(p string) string {
	if !strings.ContainsAny(p, "%#") {
		return p
	}
	return partEscaper.Replace(p)
}

// ParseCallerKey is the inverse of [Caller.Key].
func ParseCallerKey(key string) (Caller, error) {
	parts := strings.Split(key, "#")
	if len(parts) != 4 {
		return Caller{}, errors.New("audit: a caller key has four parts, <authMethod>#<issuer>#<tenant>#<subject>")
	}
	for i, p := range parts {
		if strings.Contains(p, "%") {
			u, err := url.PathUnescape(p)
			if err != nil {
				return Caller{}, errors.New("audit: caller key: bad escape in " + p)
			}
			parts[i] = u
		}
	}
	if parts[3] == "" {
		return Caller{}, errors.New("audit: caller key: no subject")
	}
	return Caller{AuthMethod: parts[0], Issuer: parts[1], Tenant: parts[2], Subject: parts[3]}, nil
}

// callerOf is the principal a row records.
func callerOf(r *Row) Caller {
	return Caller{AuthMethod: r.CallerAuthMethod, Issuer: r.CallerIssuer, Tenant: r.Tenant, Subject: r.CallerSubject}
}
