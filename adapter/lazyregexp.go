package adapter

import (
	"regexp"
	"sync"
)

// lazyRegexp returns a function that compiles expr on its first call and
// returns the same *regexp.Regexp on every call, from any goroutine, so a
// Lambda function's cold start pays only for the expressions its calls need
// (issue 12). An invalid expr panics on that first call, as
// regexp.MustCompile would at initialisation; tests that use it find it.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
