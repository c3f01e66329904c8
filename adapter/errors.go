package adapter

import (
	"errors"
	"fmt"

	"github.com/mcpfn/mcpfn/wire"
)

// Code names a class of failure. Codes travel unchanged from a handler through
// the hook chain to the caller's tool result and the audit row, so a code is a
// contract: add codes, never rename them.
type Code string

// The registry of codes. Each has a default for Retryable (see [Code.Retryable]).
const (
	CodeValidation      Code = "VALIDATION_ERROR"
	CodeBadRequest      Code = "BAD_REQUEST"
	CodeUnauthorized    Code = "UNAUTHORIZED"
	CodeForbidden       Code = "FORBIDDEN"
	CodeNotFound        Code = "NOT_FOUND"
	CodeConflict        Code = "CONFLICT"
	CodePayloadTooLarge Code = "PAYLOAD_TOO_LARGE"
	CodeRateLimited     Code = "RATE_LIMITED"
	CodeTimeout         Code = "TIMEOUT"
	CodeUnavailable     Code = "UNAVAILABLE"
	CodeInternal        Code = "INTERNAL_SERVER_ERROR"
	// CodeCancelled: the caller cancelled the call (tasks/cancel or
	// notifications/cancelled) and its handler stopped.
	CodeCancelled Code = "CANCELLED"
)

// retryableByDefault says whether a caller may retry the same call unchanged.
// A code absent from the map is not retryable.
var retryableByDefault = map[Code]bool{
	CodeRateLimited: true,
	CodeTimeout:     true,
	CodeUnavailable: true,
}

// Codes returns every registered code, in a stable order.
func Codes() []Code {
	return []Code{CodeValidation, CodeBadRequest, CodeUnauthorized, CodeForbidden, CodeNotFound,
		CodeConflict, CodePayloadTooLarge, CodeRateLimited, CodeTimeout, CodeUnavailable, CodeInternal, CodeCancelled}
}

// Retryable reports the registry's default for c: true for RATE_LIMITED,
// TIMEOUT and UNAVAILABLE, false otherwise.
func (c Code) Retryable() bool { return retryableByDefault[c] }

// Error is the error a handler or hook returns to tell the caller what went
// wrong. It passes through the adapter unchanged; every other error is scrubbed
// to INTERNAL_SERVER_ERROR before the caller sees it (hooks and the audit row
// still get it whole).
//
// Message, Details and Hint are read by a model and often relayed to a user:
// put nothing in them that the caller must not see.
//
// An *Error is a value: WithDetails, WithHint and WithCause return a copy and
// leave their receiver alone, so a package-level sentinel can be refined by
// concurrent calls without a data race. Set fields only on an *Error your
// code just made.
type Error struct {
	Code      Code
	Message   string
	Details   any    // JSON-marshalable; e.g. validation issues
	Hint      string // what the caller can do about it
	Retryable bool

	cause error
}

// NewError returns an *Error with the registry's retryable default for code.
func NewError(code Code, message string) *Error {
	return &Error{Code: code, Message: message, Retryable: code.Retryable()}
}

// Errorf is NewError with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return NewError(code, fmt.Sprintf(format, args...))
}

// WithDetails returns a copy of e with Details set.
func (e *Error) WithDetails(details any) *Error { c := *e; c.Details = details; return &c }

// WithHint returns a copy of e with Hint set.
func (e *Error) WithHint(hint string) *Error { c := *e; c.Hint = hint; return &c }

// WithCause returns a copy of e that records the underlying error for hooks
// and errors.Is/As. The cause never reaches the caller.
func (e *Error) WithCause(err error) *Error { c := *e; c.cause = err; return &c }

func (e *Error) Error() string {
	if e.cause != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.cause)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Unwrap returns the cause given to WithCause.
func (e *Error) Unwrap() error { return e.cause }

// CodeOf returns the code of the first *Error in err's chain, or
// INTERNAL_SERVER_ERROR for any other non-nil error, or "" for nil.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// publicError is what the caller may see of err: the *Error in its chain
// unchanged, or a scrubbed INTERNAL_SERVER_ERROR. The raw message of an
// unexpected error can carry a connection string or a path, and the model reading
// the result relays it.
func publicError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return NewError(CodeInternal, "Internal server error")
}

// Body is e as a model reads it in an isError tool result. Every front door
// that refuses a call before its function runs (the gateway, the AgentCore
// interceptor) answers with it, so the caller sees one shape.
func (e *Error) Body() wire.ErrorBody {
	return wire.ErrorBody{Error: string(e.Code), Message: e.Message, Retryable: e.Retryable, Details: e.Details, Hint: e.Hint}
}
