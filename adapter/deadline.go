package adapter

import (
	"context"
	"time"
)

// callDeadlineFunc derives a call's context from the invocation's, ending it
// by deadline: context.WithDeadline, unless a test of this package has put
// another in the invocation's context (withCallDeadline).
type callDeadlineFunc func(ctx context.Context, deadline time.Time) (context.Context, context.CancelFunc)

type callDeadlineKey struct{}

// withCallDeadline returns ctx carrying f, which the call uses in place of
// context.WithDeadline for its context (its deadline, a reserve before the
// invocation's). A test's f may end the call's context at an event (the
// handler has started) instead of at a time that a slow machine can reach
// before the event. The key is unexported: nothing outside this package can
// set it, and an invocation's context, which aws-lambda-go makes, never
// carries it; without it the cost is one context lookup per call.
func withCallDeadline(ctx context.Context, f callDeadlineFunc) context.Context {
	return context.WithValue(ctx, callDeadlineKey{}, f)
}

// callDeadline returns the function ctx carries, or context.WithDeadline.
func callDeadline(ctx context.Context) callDeadlineFunc {
	if f, ok := ctx.Value(callDeadlineKey{}).(callDeadlineFunc); ok && f != nil {
		return f
	}
	return context.WithDeadline
}
