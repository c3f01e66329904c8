package adapter

import (
	"fmt"
	"slices"
	"sync"
)

// TeardownScope says how long a cleanup waits.
type TeardownScope string

const (
	// TeardownCall runs when the call has finished, after AfterToolCall.
	TeardownCall TeardownScope = "call"
	// TeardownEnvironment runs when Lambda shuts the execution environment
	// down (SIGTERM); honoured only where the function receives SIGTERM.
	TeardownEnvironment TeardownScope = "environment"
)

type teardownList struct {
	scopes []TeardownScope
	env    *environmentTeardown
	mu     sync.Mutex
	call   []func()
}

// TeardownScopes reports which scopes this environment honours. An empty list
// means no cleanup registered here would ever run.
func (c *Call) TeardownScopes() []TeardownScope {
	return append([]TeardownScope(nil), c.teardown.scopes...)
}

// OnTeardown registers cleanup for scope. It errors, naming the scopes this
// environment honours, when scope is not among them: a cleanup that would
// never run is a promise the framework cannot keep.
func (c *Call) OnTeardown(scope TeardownScope, cleanup func()) error {
	if !slices.Contains(c.teardown.scopes, scope) {
		return fmt.Errorf("adapter: teardown scope %q is not honoured here (honoured: %v)", scope, c.TeardownScopes())
	}
	switch scope {
	case TeardownCall:
		c.teardown.mu.Lock()
		c.teardown.call = append(c.teardown.call, cleanup)
		c.teardown.mu.Unlock()
	case TeardownEnvironment:
		c.teardown.env.add(cleanup)
	}
	return nil
}

// runCallTeardown runs call-scoped cleanups last-registered first.
func (c *Call) runCallTeardown(logf func(string, ...any)) {
	c.teardown.mu.Lock()
	fns := c.teardown.call
	c.teardown.call = nil
	c.teardown.mu.Unlock()
	runCleanups(fns, "call", logf)
}

// environmentTeardown holds environment-scoped cleanups of one function.
type environmentTeardown struct {
	mu  sync.Mutex
	fns []func()
}

func (e *environmentTeardown) add(f func()) {
	e.mu.Lock()
	e.fns = append(e.fns, f)
	e.mu.Unlock()
}

// run runs and forgets the registered cleanups, last first.
func (e *environmentTeardown) run(logf func(string, ...any)) {
	e.mu.Lock()
	fns := e.fns
	e.fns = nil
	e.mu.Unlock()
	runCleanups(fns, "environment", logf)
}

// runCleanups runs fns last first. A cleanup that panics is logged and the
// rest still run: one broken cleanup must not leak the others' resources.
func runCleanups(fns []func(), scope string, logf func(string, ...any)) {
	for i := len(fns) - 1; i >= 0; i-- {
		if err := guard(func() error { fns[i](); return nil }); err != nil {
			logf("mcpfn: %s teardown panicked: %v", scope, err.(*PanicError).Value)
		}
	}
}
