package iam

import (
	"fmt"
	"strings"
)

type operator int

const (
	opStringEquals operator = iota
	opStringNotEquals
	opStringEqualsIgnoreCase
	opStringNotEqualsIgnoreCase
	opStringLike
	opStringNotLike
	opArnEquals
	opArnLike
	opArnNotEquals
	opArnNotLike
	opBool
	opNull
)

var operators = map[string]operator{
	"StringEquals": opStringEquals, "StringNotEquals": opStringNotEquals,
	"StringEqualsIgnoreCase": opStringEqualsIgnoreCase, "StringNotEqualsIgnoreCase": opStringNotEqualsIgnoreCase,
	"StringLike": opStringLike, "StringNotLike": opStringNotLike,
	"ArnEquals": opArnEquals, "ArnLike": opArnLike, "ArnNotEquals": opArnNotEquals, "ArnNotLike": opArnNotLike,
	"Bool": opBool, "Null": opNull,
}

// SupportedOperators are the condition operators the evaluator knows, each
// also with the IfExists suffix (not Null) and, the String and Arn ones,
// with the ForAllValues: and ForAnyValue: prefixes.
func SupportedOperators() []string { return sortedKeys(operators) }

type setOp int

const (
	single setOp = iota
	forAllValues
	forAnyValue
)

// negated operators are true where the key is missing, and with several
// policy values require that none matches.
func (o operator) negated() bool {
	switch o {
	case opStringNotEquals, opStringNotEqualsIgnoreCase, opStringNotLike, opArnNotEquals, opArnNotLike:
		return true
	}
	return false
}

func parseOperator(name string) (operator, setOp, bool, error) {
	rest, set := name, single
	if r, ok := strings.CutPrefix(rest, "ForAllValues:"); ok {
		rest, set = r, forAllValues
	} else if r, ok := strings.CutPrefix(rest, "ForAnyValue:"); ok {
		rest, set = r, forAnyValue
	}
	base, ifExists := strings.CutSuffix(rest, "IfExists")
	op, ok := operators[base]
	if !ok {
		return 0, 0, false, fmt.Errorf("the condition operator %s", name)
	}
	if op == opNull && (ifExists || set != single) {
		return 0, 0, false, fmt.Errorf("the condition operator %s", name)
	}
	if op == opBool && set != single {
		return 0, 0, false, fmt.Errorf("the condition operator %s", name)
	}
	return op, set, ifExists, nil
}

// match reports whether one request value matches one policy value under
// the operator's positive form.
func (o operator) match(policy, request string) bool {
	switch o {
	case opStringEquals, opStringNotEquals:
		return policy == request
	case opStringEqualsIgnoreCase, opStringNotEqualsIgnoreCase:
		return strings.EqualFold(policy, request)
	case opStringLike, opStringNotLike:
		return glob(policy, request, false)
	case opArnEquals, opArnLike, opArnNotEquals, opArnNotLike:
		return arnLike(policy, request)
	case opBool:
		return strings.EqualFold(policy, request)
	}
	return false
}

// matchesAny: does the request value match one of the policy's values?
func (c *Condition) matchesAny(request string) bool {
	for _, p := range c.Values {
		if c.op.match(p, request) {
			return true
		}
	}
	return false
}

// eval decides the condition against the request's value of its key. A
// value the request could not derive makes it undecidable (ok false).
func (c *Condition) eval(ctx Context) (result, ok bool, why string) {
	v, present := ctx.get(c.Key)
	if present && v.Unknown {
		return false, false, fmt.Sprintf("%s (%s)", c.Key, v.Reason)
	}
	if c.op == opNull {
		want := strings.EqualFold(c.Values[0], "true")
		// Several values: any of them (OR), as for every operator.
		for _, s := range c.Values[1:] {
			if strings.EqualFold(s, "true") != want {
				return true, true, ""
			}
		}
		return want == !present, true, ""
	}
	if present && len(v.Values) == 0 {
		// An empty set is there for Null, but has no value to compare.
		present = false
	}
	if !present {
		// A set operator decides an absent key by itself, IfExists or
		// not: every value (of none) passes; no value passes.
		switch {
		case c.set == forAllValues:
			return true, true, ""
		case c.set == forAnyValue:
			return false, true, ""
		case c.ifExists:
			return true, true, ""
		}
		return c.op.negated(), true, ""
	}
	// A request value passes when it matches one of the policy's values,
	// or for a negated operator when it matches none of them.
	passes := func(s string) bool {
		m := c.matchesAny(s)
		if c.op.negated() {
			return !m
		}
		return m
	}
	switch c.set {
	case forAllValues:
		for _, s := range v.Values {
			if !passes(s) {
				return false, true, ""
			}
		}
		return true, true, ""
	case forAnyValue:
		for _, s := range v.Values {
			if passes(s) {
				return true, true, ""
			}
		}
		return false, true, ""
	}
	// A single-valued operator on a key with several values: AWS compares
	// each; a negated operator holds only if no value matches.
	if c.op.negated() {
		for _, s := range v.Values {
			if !passes(s) {
				return false, true, ""
			}
		}
		return true, true, ""
	}
	for _, s := range v.Values {
		if passes(s) {
			return true, true, ""
		}
	}
	return false, true, ""
}
