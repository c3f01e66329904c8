package adapter

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
)

// PanicError is the error a recovered panic becomes. Hooks receive it (with
// the stack); the caller sees INTERNAL_SERVER_ERROR.
type PanicError struct {
	Value any
	Stack []byte
}

func (p *PanicError) Error() string { return fmt.Sprintf("panic: %v", p.Value) }

// Unwrap exposes a panicked error value to errors.Is/As.
func (p *PanicError) Unwrap() error {
	if err, ok := p.Value.(error); ok {
		return err
	}
	return nil
}

// guard runs fn, turning a panic into a *PanicError.
func guard(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return fn()
}

// stepResult is what one step of the chain returned.
type stepResult[T any] struct {
	v   T
	err error
	// timedOut: the call's context ended before the step returned, or the
	// step returned the context's own error. err is then ctx.Err().
	timedOut bool
}

// bounded runs fn, one step of the chain, on its own goroutine, guarded
// against panics, and waits for it or for the end of ctx, whichever comes
// first. Go cannot stop a step that ignores its context: it runs on, and
// running is where its result will arrive (nil when the step returned).
func bounded[T any](ctx context.Context, call *Call, fn func(context.Context, *Call) (T, error)) (r stepResult[T], running <-chan stepResult[T]) {
	done := make(chan stepResult[T], 1)
	go func() {
		var r stepResult[T]
		r.err = guard(func() error {
			var err error
			r.v, err = fn(ctx, call)
			return err
		})
		done <- r
	}()
	select {
	case r = <-done:
	case <-ctx.Done():
		select {
		case r = <-done: // returned at the same instant: its answer counts
		default:
			return stepResult[T]{err: context.Cause(ctx), timedOut: true}, done
		}
	}
	if r.err != nil && ctx.Err() != nil && errors.Is(r.err, ctx.Err()) {
		return stepResult[T]{err: context.Cause(ctx), timedOut: true}, nil
	}
	return r, nil
}
