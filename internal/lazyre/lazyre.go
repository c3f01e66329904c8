// Package lazyre compiles a regular expression on its first use rather
// than at package initialisation, so that a Lambda function's cold start
// pays only for the expressions its calls need (issue 12).
package lazyre

import (
	"regexp"
	"sync"
)

// New returns a function that compiles expr on its first call and returns
// the same *regexp.Regexp on every call, from any goroutine. An invalid
// expr panics on that first call, as [regexp.MustCompile] would at
// initialisation; tests that use the expression find it.
func New(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
