package ddbproxy

import (
	"fmt"
	"strings"
)

// exprNames reads the attribute names out of DynamoDB expressions, with a
// request's ExpressionAttributeNames.
type exprNames struct{ subst map[string]string }

func newNames(subst map[string]string) *exprNames { return &exprNames{subst: subst} }

type tokKind int

const (
	tokName  tokKind = iota // an attribute name, written or #placeholder
	tokValue                // :placeholder
	tokWord                 // a keyword or function name
	tokNumber
	tokPunct
)

type token struct {
	kind tokKind
	text string // the name (substituted), the placeholder, the punctuation
}

var keywords = map[string]bool{"set": true, "remove": true, "add": true, "delete": true, "and": true, "or": true, "not": true, "between": true, "in": true}

func isIdent(c byte, first bool) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || (!first && '0' <= c && c <= '9')
}

func (n *exprNames) tokens(expr string) ([]token, error) {
	var out []token
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#' || c == ':':
			j := i + 1
			for j < len(expr) && isIdent(expr[j], false) {
				j++
			}
			if j == i+1 {
				return nil, fmt.Errorf("the expression %q has a bare %c", expr, c)
			}
			if c == ':' {
				out = append(out, token{tokValue, expr[i:j]})
			} else {
				name, ok := n.subst[expr[i:j]]
				if !ok {
					return nil, fmt.Errorf("the expression %q uses %s, which ExpressionAttributeNames does not define", expr, expr[i:j])
				}
				out = append(out, token{tokName, name})
			}
			i = j
		case isIdent(c, true):
			j := i + 1
			for j < len(expr) && isIdent(expr[j], false) {
				j++
			}
			w := expr[i:j]
			// A function call or a keyword is no attribute name.
			k := j
			for k < len(expr) && expr[k] == ' ' {
				k++
			}
			if keywords[strings.ToLower(w)] || (k < len(expr) && expr[k] == '(') {
				out = append(out, token{tokWord, w})
			} else {
				out = append(out, token{tokName, w})
			}
			i = j
		case '0' <= c && c <= '9':
			j := i + 1
			for j < len(expr) && '0' <= expr[j] && expr[j] <= '9' {
				j++
			}
			out = append(out, token{tokNumber, expr[i:j]})
			i = j
		case strings.IndexByte("=<>(),.[]+-", c) >= 0:
			out = append(out, token{tokPunct, string(c)})
			i++
		default:
			return nil, fmt.Errorf("the expression %q has %q, which the local stack does not parse", expr, c)
		}
	}
	return out, nil
}

// in returns the top-level attribute names expr refers to (a.b[1] → a).
func (n *exprNames) in(expr string) ([]string, error) {
	toks, err := n.tokens(expr)
	if err != nil {
		return nil, err
	}
	var out []string
	for i, t := range toks {
		if t.kind != tokName {
			continue
		}
		if i > 0 && toks[i-1].kind == tokPunct && toks[i-1].text == "." {
			continue // a nested element's name
		}
		out = append(out, t.text)
	}
	return out, nil
}

// equality returns the value placeholder that expr compares the top-level
// attribute name with (name = :v, or :v = name).
func (n *exprNames) equality(expr, name string) (string, error) {
	toks, err := n.tokens(expr)
	if err != nil {
		return "", err
	}
	for i := 0; i+2 < len(toks); i++ {
		a, eq, b := toks[i], toks[i+1], toks[i+2]
		if eq.kind != tokPunct || eq.text != "=" {
			continue
		}
		nested := func(j int) bool {
			return (j > 0 && toks[j-1].kind == tokPunct && toks[j-1].text == ".") ||
				(j+1 < len(toks) && toks[j+1].kind == tokPunct && (toks[j+1].text == "." || toks[j+1].text == "["))
		}
		if a.kind == tokName && a.text == name && b.kind == tokValue && !nested(i) {
			return b.text, nil
		}
		if b.kind == tokName && b.text == name && a.kind == tokValue && !nested(i+2) {
			return a.text, nil
		}
	}
	return "", fmt.Errorf("the key condition %q has no equality on %s", expr, name)
}
