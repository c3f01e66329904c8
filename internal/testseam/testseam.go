// Package testseam carries the seams tests use to order events that the
// product times by the clock. A seam travels in the invocation's context,
// so it reaches only the invocation a test made; outside this module it
// cannot be set (the package is internal), and a context without one costs
// the product a context lookup.
package testseam

import (
	"context"
	"time"
)

// CallDeadlineFunc derives a call's context from the invocation's, ending
// it by deadline: what the adapter does with context.WithDeadline.
type CallDeadlineFunc func(ctx context.Context, deadline time.Time) (context.Context, context.CancelFunc)

type callDeadlineKey struct{}

// WithCallDeadline returns ctx carrying f, which the adapter uses in place
// of context.WithDeadline for the call's context (its deadline, a reserve
// before the invocation's). A test's f may end the call's context at an
// event (the handler has started) instead of at a time that a slow machine
// can reach before the event.
func WithCallDeadline(ctx context.Context, f CallDeadlineFunc) context.Context {
	return context.WithValue(ctx, callDeadlineKey{}, f)
}

// CallDeadline returns the seam ctx carries, or context.WithDeadline.
func CallDeadline(ctx context.Context) CallDeadlineFunc {
	if f, ok := ctx.Value(callDeadlineKey{}).(CallDeadlineFunc); ok && f != nil {
		return f
	}
	return context.WithDeadline
}
