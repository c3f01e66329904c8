package iam

import (
	"fmt"
	"strings"
)

// Principal is who makes a request: an assumed-role session (a Lambda
// function's role) or an IAM user.
type Principal struct {
	// ARN is the caller's ARN as AWS reports it: for a role session
	// arn:aws:sts::<account>:assumed-role/<role>/<session>.
	ARN string
	// IAMARN is the role or user ARN (aws:PrincipalArn):
	// arn:aws:iam::<account>:role/<role>.
	IAMARN  string
	Account string
}

// SessionPrincipal is a session of the role roleARN named session.
func SessionPrincipal(roleARN, session string) Principal {
	acct, name := "", roleARN
	if parts := strings.SplitN(roleARN, ":", 6); len(parts) == 6 {
		acct = parts[4]
		name = strings.TrimPrefix(parts[5], "role/")
		if i := strings.LastIndex(name, "/"); i >= 0 { // a role path
			name = name[i+1:]
		}
	}
	return Principal{ARN: "arn:aws:sts::" + acct + ":assumed-role/" + name + "/" + session, IAMARN: roleARN, Account: acct}
}

// Value is a request's value of one condition key.
type Value struct {
	Values []string
	// Unknown: the request carries the key but its value could not be
	// derived; Reason says why. No Allow statement conditioned on the
	// key applies, and every Deny statement conditioned on it does.
	Unknown bool
	Reason  string
}

// Context is a request's condition keys and values (keys compare
// case-insensitively).
type Context map[string]Value

// Set sets key to values (none: an empty set, as absent).
func (c Context) Set(key string, values ...string) { c[strings.ToLower(key)] = Value{Values: values} }

// SetUnknown marks key as present but not derived, for reason.
func (c Context) SetUnknown(key, reason string) {
	c[strings.ToLower(key)] = Value{Unknown: true, Reason: reason}
}

func (c Context) get(key string) (Value, bool) {
	v, ok := c[strings.ToLower(key)]
	return v, ok
}

// Request is what is decided: a principal performing one action on one
// resource.
type Request struct {
	Principal Principal
	Action    string // service:Operation
	Resource  string // an ARN
	Context   Context
}

// Result is a decision's outcome.
type Result int

const (
	ImplicitDeny Result = iota
	Allowed
	ExplicitDeny
)

func (r Result) String() string {
	switch r {
	case Allowed:
		return "Allowed"
	case ExplicitDeny:
		return "ExplicitlyDenied"
	}
	return "ImplicitlyDenied"
}

// Decision is the outcome of [Evaluate] and what decided it.
type Decision struct {
	Result Result
	// By is the kind of policy whose statement decided an explicit deny.
	By Kind
	// Statement names the deciding statement ("policy Statement[i]" or
	// its Sid), "" for an implicit deny.
	Statement string
	// Unevaluable lists the conditions that could not be decided for
	// this request (an [Unknown] value): each kept an Allow from applying,
	// or made a Deny apply.
	Unevaluable []string
}

// Message is the AccessDenied message AWS gives for a denied request, e.g.
// "User: arn:aws:sts::…:assumed-role/R/S is not authorized to perform:
// dynamodb:PutItem on resource: arn:… because no identity-based policy
// allows the dynamodb:PutItem action".
func (d Decision) Message(req Request) string {
	head := fmt.Sprintf("User: %s is not authorized to perform: %s on resource: %s", req.Principal.ARN, req.Action, req.Resource)
	var msg string
	if d.Result == ExplicitDeny {
		msg = fmt.Sprintf("%s with an explicit deny in a %s policy", head, d.By)
	} else {
		msg = fmt.Sprintf("%s because no identity-based policy allows the %s action", head, req.Action)
	}
	if len(d.Unevaluable) > 0 {
		// Not AWS's: says why a local request was not decided as AWS
		// would decide it.
		msg += " (mcpfn local: not evaluated locally: " + strings.Join(d.Unevaluable, "; ") + ")"
	}
	return msg
}

// Evaluate decides req as AWS decides a request within one account:
// an explicit Deny in any policy denies; otherwise an Allow in the
// principal's identity policies or in the resource's policy allows; else
// the request is implicitly denied. resource may be nil (no resource
// policy).
func Evaluate(req Request, identity []*Policy, resource *Policy) Decision {
	var d Decision
	allowed := false
	consider := func(p *Policy) {
		for i := range p.Statements {
			st := &p.Statements[i]
			applies, grants, why := st.applies(req, p.Kind)
			if why != "" {
				d.Unevaluable = append(d.Unevaluable, why)
			}
			if !applies {
				continue
			}
			if st.Effect == Deny {
				if d.Result != ExplicitDeny {
					d.Result, d.By, d.Statement = ExplicitDeny, p.Kind, statementName(p, i)
				}
				continue
			}
			if grants && !allowed {
				allowed = true
				if d.Result != ExplicitDeny {
					d.Statement = statementName(p, i)
				}
			}
		}
	}
	for _, p := range identity {
		consider(p)
	}
	if resource != nil {
		consider(resource)
	}
	switch {
	case d.Result == ExplicitDeny:
	case allowed:
		d.Result = Allowed
	default:
		d.Statement = ""
	}
	return d
}

func statementName(p *Policy, i int) string {
	if sid := p.Statements[i].Sid; sid != "" {
		return p.Name + " " + sid
	}
	return fmt.Sprintf("%s Statement[%d]", p.Name, i)
}

// applies reports whether the statement applies to req and, for an Allow,
// whether it grants it by itself (a resource policy's Allow for a whole
// account delegates to the account's identity policies and grants
// nothing). why names a condition that could not be decided.
func (st *Statement) applies(req Request, kind Kind) (applies, grants bool, why string) {
	if !st.actionMatches(req.Action) || !st.resourceMatches(req.Resource) {
		return false, false, ""
	}
	grants = true
	if kind == ResourceBased {
		switch st.Principal.match(req.Principal) {
		case noMatch:
			return false, false, ""
		case accountMatch:
			grants = false
		}
	}
	for i := range st.Conditions {
		c := &st.Conditions[i]
		ok, decided, reason := c.eval(req.Context)
		if !decided {
			why = fmt.Sprintf("%s %s: %s", c.Operator, c.Key, reason)
			// Fail closed: an Allow does not apply, a Deny does.
			return st.Effect == Deny, false, why
		}
		if !ok {
			return false, false, ""
		}
	}
	return true, grants, ""
}

func (st *Statement) actionMatches(action string) bool {
	m := false
	for _, p := range st.Actions {
		if actionMatches(p, action) {
			m = true
			break
		}
	}
	return m != st.NotAction
}

func (st *Statement) resourceMatches(resource string) bool {
	m := false
	for _, p := range st.Resources {
		if arnLike(p, resource) {
			m = true
			break
		}
	}
	return m != st.NotResource
}

type principalMatch int

const (
	noMatch principalMatch = iota
	accountMatch
	fullMatch
)

func (p *Principals) match(req Principal) principalMatch {
	if p.Any {
		return fullMatch
	}
	best := noMatch
	for _, a := range p.AWS {
		switch {
		case a == req.IAMARN || a == req.ARN:
			return fullMatch
		case a == req.Account || a == "arn:aws:iam::"+req.Account+":root":
			best = accountMatch
		}
	}
	return best
}
