package iam

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Kind says where a policy is attached, which decides the elements it may
// have: a resource policy names principals, an identity policy does not.
type Kind int

const (
	// IdentityBased policies are attached to a role or user.
	IdentityBased Kind = iota
	// ResourceBased policies are attached to a resource (a secret, a
	// function).
	ResourceBased
)

func (k Kind) String() string {
	if k == ResourceBased {
		return "resource-based"
	}
	return "identity-based"
}

// Effect is a statement's Allow or Deny.
type Effect string

const (
	Allow Effect = "Allow"
	Deny  Effect = "Deny"
)

// Policy is a parsed policy document.
type Policy struct {
	// Name says where the policy comes from, for messages (e.g.
	// "BroadcastGetFunctionRole inline policy 0").
	Name       string
	Kind       Kind
	Statements []Statement
}

// Statement is one statement of a policy.
type Statement struct {
	Sid    string
	Effect Effect
	// Principal is nil in identity policies.
	Principal *Principals
	// Actions, or with NotAction the actions the statement does not
	// apply to.
	Actions   []string
	NotAction bool
	// Resources, or with NotResource the resources it does not apply to.
	Resources   []string
	NotResource bool
	Conditions  []Condition
}

// Principals is a statement's Principal element.
type Principals struct {
	Any     bool     // "*" or {"AWS": "*"}
	AWS     []string // account ids, root, role, user and session ARNs
	Service []string
	// Federated and CanonicalUser principals: parsed so a policy naming
	// them is accepted, never matched by a local caller.
	Other []string
}

// Condition is one operator-key pair of a Condition element, with its
// values.
type Condition struct {
	Operator string // as written, e.g. "ForAllValues:StringLike"
	Key      string // as written; matched case-insensitively
	Values   []string

	op       operator
	set      setOp
	ifExists bool
}

// UnsupportedError is a policy element the evaluator does not evaluate. The
// local stack refuses to start on one, rather than skip it.
type UnsupportedError struct {
	Policy string // the policy's Name
	Path   string // where in the document, e.g. "Statement[1].Condition"
	What   string
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("iam: %s: %s: %s is not evaluated locally", e.Policy, e.Path, e.What)
}

// ParsePolicy parses a policy document: a JSON object (json.RawMessage,
// []byte or string) or the value it decodes to (map[string]any, as a
// resolved template gives it). name is for messages.
func ParsePolicy(name string, kind Kind, doc any) (*Policy, error) {
	switch d := doc.(type) {
	case []byte:
		return ParsePolicy(name, kind, json.RawMessage(d))
	case string:
		return ParsePolicy(name, kind, json.RawMessage(d))
	case json.RawMessage:
		var v any
		if err := json.Unmarshal(d, &v); err != nil {
			return nil, fmt.Errorf("iam: %s: %w", name, err)
		}
		doc = v
	}
	p := &Policy{Name: name, Kind: kind}
	bad := func(path, format string, args ...any) error {
		return fmt.Errorf("iam: %s: %s: %s", name, path, fmt.Sprintf(format, args...))
	}
	unsupported := func(path, format string, args ...any) error {
		return &UnsupportedError{Policy: name, Path: path, What: fmt.Sprintf(format, args...)}
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return nil, bad("policy", "not a JSON object")
	}
	for k, v := range m {
		switch k {
		case "Version":
			if s, _ := v.(string); s != "2012-10-17" && s != "2008-10-17" {
				return nil, bad("Version", "%v is not a policy language version", v)
			}
		case "Id":
		case "Statement":
		default:
			return nil, unsupported(k, "the top-level element %q", k)
		}
	}
	var stmts []any
	switch s := m["Statement"].(type) {
	case []any:
		stmts = s
	case map[string]any:
		stmts = []any{s}
	default:
		return nil, bad("Statement", "missing, or neither an object nor a list")
	}
	for i, raw := range stmts {
		path := fmt.Sprintf("Statement[%d]", i)
		sm, ok := raw.(map[string]any)
		if !ok {
			return nil, bad(path, "not an object")
		}
		st, err := parseStatement(sm, kind, path, bad, unsupported)
		if err != nil {
			return nil, err
		}
		p.Statements = append(p.Statements, st)
	}
	return p, nil
}

type errf func(path, format string, args ...any) error

func parseStatement(sm map[string]any, kind Kind, path string, bad, unsupported errf) (Statement, error) {
	var st Statement
	for k := range sm {
		switch k {
		case "Sid", "Effect", "Action", "NotAction", "Resource", "NotResource", "Condition", "Principal":
		case "NotPrincipal":
			return st, unsupported(path, "NotPrincipal")
		default:
			return st, bad(path, "unknown element %q", k)
		}
	}
	st.Sid, _ = sm["Sid"].(string)
	switch e, _ := sm["Effect"].(string); Effect(e) {
	case Allow, Deny:
		st.Effect = Effect(e)
	default:
		return st, bad(path+".Effect", "%q is neither Allow nor Deny", sm["Effect"])
	}

	actions, notAction, err := oneOf(sm, "Action", "NotAction", path, bad)
	if err != nil {
		return st, err
	}
	for _, a := range actions {
		if a != "*" && !strings.Contains(a, ":") {
			return st, bad(path, "action %q is not service:Action", a)
		}
		if strings.Contains(a, "${") {
			return st, unsupported(path, "the policy variable in %q", a)
		}
	}
	st.Actions, st.NotAction = actions, notAction

	resources, notResource, err := oneOf(sm, "Resource", "NotResource", path, bad)
	if err != nil {
		return st, err
	}
	for _, r := range resources {
		if strings.Contains(r, "${") {
			return st, unsupported(path, "the policy variable in resource %q", r)
		}
		if r != "*" && !strings.HasPrefix(r, "arn:") {
			return st, bad(path, "resource %q is neither * nor an ARN", r)
		}
	}
	st.Resources, st.NotResource = resources, notResource

	pr, hasPrincipal := sm["Principal"]
	switch {
	case kind == IdentityBased && hasPrincipal:
		return st, bad(path, "an identity-based policy names no Principal")
	case kind == ResourceBased && !hasPrincipal:
		return st, bad(path, "a resource-based policy statement needs a Principal")
	case hasPrincipal:
		if st.Principal, err = parsePrincipal(pr, path+".Principal", bad, unsupported); err != nil {
			return st, err
		}
	}

	if c, ok := sm["Condition"]; ok {
		if st.Conditions, err = parseConditions(c, path+".Condition", bad, unsupported); err != nil {
			return st, err
		}
	}
	return st, nil
}

// oneOf reads exactly one of two list-or-string elements (Action and
// NotAction, Resource and NotResource).
func oneOf(sm map[string]any, pos, neg, path string, bad errf) ([]string, bool, error) {
	p, hasP := sm[pos]
	n, hasN := sm[neg]
	switch {
	case hasP && hasN:
		return nil, false, bad(path, "both %s and %s", pos, neg)
	case !hasP && !hasN:
		return nil, false, bad(path, "neither %s nor %s", pos, neg)
	case hasN:
		l, err := stringList(n, path+"."+neg, bad)
		return l, true, err
	}
	l, err := stringList(p, path+"."+pos, bad)
	return l, false, err
}

func stringList(v any, path string, bad errf) ([]string, error) {
	var out []string
	switch x := v.(type) {
	case string:
		out = []string{x}
	case []any:
		for _, e := range x {
			s, err := scalar(e)
			if err != nil {
				return nil, bad(path, "%v", err)
			}
			out = append(out, s)
		}
	case []string:
		out = slices.Clone(x)
	default:
		return nil, bad(path, "%v is neither a string nor a list", v)
	}
	if len(out) == 0 {
		return nil, bad(path, "empty")
	}
	return out, nil
}

// scalar renders a policy value as IAM compares it: condition values may be
// written as JSON numbers and booleans.
func scalar(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case bool:
		return strconv.FormatBool(x), nil
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	case int:
		return strconv.Itoa(x), nil
	case json.Number:
		return x.String(), nil
	}
	return "", fmt.Errorf("%v is not a string", v)
}

func parsePrincipal(v any, path string, bad, unsupported errf) (*Principals, error) {
	p := &Principals{}
	if s, ok := v.(string); ok {
		if s != "*" {
			return nil, bad(path, "a string Principal must be \"*\", got %q", s)
		}
		p.Any = true
		return p, nil
	}
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		return nil, bad(path, "neither \"*\" nor an object")
	}
	for k, e := range m {
		l, err := stringList(e, path+"."+k, bad)
		if err != nil {
			return nil, err
		}
		for _, s := range l {
			if strings.Contains(s, "${") {
				return nil, unsupported(path, "the policy variable in principal %q", s)
			}
		}
		switch k {
		case "AWS":
			for _, s := range l {
				if s == "*" {
					p.Any = true
					continue
				}
				if !isAccountID(s) && !strings.HasPrefix(s, "arn:") {
					return nil, bad(path, "AWS principal %q is neither an account id nor an ARN", s)
				}
				p.AWS = append(p.AWS, s)
			}
		case "Service":
			p.Service = append(p.Service, l...)
		case "Federated", "CanonicalUser":
			p.Other = append(p.Other, l...)
		default:
			return nil, bad(path, "unknown principal type %q", k)
		}
	}
	return p, nil
}

func isAccountID(s string) bool {
	if len(s) != 12 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func parseConditions(v any, path string, bad, unsupported errf) ([]Condition, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, bad(path, "not an object")
	}
	var out []Condition
	for _, opName := range sortedKeys(m) {
		op, set, ifExists, err := parseOperator(opName)
		if err != nil {
			return nil, unsupported(path, "%v", err)
		}
		keys, ok := m[opName].(map[string]any)
		if !ok || len(keys) == 0 {
			return nil, bad(path+"."+opName, "not an object of condition keys")
		}
		for _, key := range sortedKeys(keys) {
			vals, err := stringList(keys[key], path+"."+opName+"."+key, bad)
			if err != nil {
				return nil, err
			}
			for _, s := range vals {
				if strings.Contains(s, "${") {
					return nil, unsupported(path+"."+opName, "the policy variable in %q", s)
				}
			}
			multi := MultiValuedKeys[strings.ToLower(key)]
			switch {
			case multi && set == single && op != opNull:
				// AWS documents set operators for these keys; what a
				// single-valued operator decides on a set is not
				// something to guess.
				return nil, unsupported(path+"."+opName, "the single-valued operator %s on the multivalued key %s (use ForAllValues: or ForAnyValue:)", opName, key)
			case !multi && set != single:
				return nil, unsupported(path+"."+opName, "the set operator %s on the single-valued key %s", opName, key)
			}
			if op == opNull || op == opBool {
				for _, s := range vals {
					if ls := strings.ToLower(s); ls != "true" && ls != "false" {
						return nil, bad(path+"."+opName+"."+key, "%q is neither true nor false", s)
					}
				}
			}
			out = append(out, Condition{Operator: opName, Key: key, Values: vals, op: op, set: set, ifExists: ifExists})
		}
	}
	return out, nil
}

// MultiValuedKeys are the condition keys whose values are sets (lower
// case): set operators apply to them, and only to them.
var MultiValuedKeys = map[string]bool{
	"dynamodb:leadingkeys": true, "dynamodb:attributes": true,
	"aws:tagkeys": true, "aws:calledvia": true, "aws:principalorgpaths": true,
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
