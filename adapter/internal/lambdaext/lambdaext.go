// Package lambdaext is a minimal client of the Lambda Extensions API for an
// internal extension: one registered by the function's own process, before
// the runtime's first /next, that takes part in every invocation.
//
// Lambda ends an invocation (and may freeze the environment or hand it the
// next invoke) only when the runtime and every registered extension have
// called next. The runtime's response reaches the caller as soon as it is
// posted; an extension subscribed to INVOKE holds the invocation open after
// that until it calls next again. mcpfn uses it to write audit rows after
// the response (docs/decisions/0023-audit-after-response.md).
//
// Registering any extension also makes Lambda send SIGTERM (not only
// SIGKILL) before shutting the environment down; an internal extension gets
// no SHUTDOWN event, so the process handles SIGTERM itself.
package lambdaext

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Extensions API headers and path (version 2020-01-01).
const (
	headerName       = "Lambda-Extension-Name"
	headerIdentifier = "Lambda-Extension-Identifier"
	apiPath          = "/2020-01-01/extension/"
)

// ErrRegistrationClosed is the 403 Lambda answers once the runtime has
// called /next: an extension registers during Init or never.
var ErrRegistrationClosed = errors.New("lambdaext: registration closed (the runtime already asked for its first invocation)")

// Extension is one registered internal extension.
type Extension struct {
	base   string
	id     string
	client *http.Client
}

// Event is what event/next returns: an INVOKE or a SHUTDOWN.
type Event struct {
	EventType string `json:"eventType"`
	// RequestID is the invocation's id (INVOKE), the runtime's
	// Lambda-Runtime-Aws-Request-Id.
	RequestID string `json:"requestId"`
	// DeadlineMs is the invocation's deadline in Unix milliseconds.
	DeadlineMs         int64  `json:"deadlineMs"`
	ShutdownReason     string `json:"shutdownReason"`
	InvokedFunctionArn string `json:"invokedFunctionArn"`
}

// Deadline is the event's deadline, or the zero time without one.
func (e Event) Deadline() time.Time {
	if e.DeadlineMs <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(e.DeadlineMs)
}

// Register registers the internal extension name with the Runtime API at
// api (host:port, AWS_LAMBDA_RUNTIME_API), subscribed to events. It must be
// called before the runtime's first /next (before lambda.Start); later it
// fails with [ErrRegistrationClosed].
func Register(ctx context.Context, api, name string, events ...string) (*Extension, error) {
	if api == "" {
		return nil, errors.New("lambdaext: no Runtime API address (AWS_LAMBDA_RUNTIME_API is unset: not on Lambda)")
	}
	if events == nil {
		events = []string{}
	}
	body, _ := json.Marshal(struct {
		Events []string `json:"events"`
	}{events})
	// Long-polled next calls must never time out on the client's side.
	e := &Extension{base: "http://" + api + apiPath, client: &http.Client{Transport: &http.Transport{Proxy: nil}}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.base+"register", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set(headerName, name)
	res, err := e.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("lambdaext: register %s: %w", name, err)
	}
	defer res.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(res.Body, 1024))
	switch {
	case res.StatusCode == http.StatusForbidden:
		return nil, fmt.Errorf("%w: %s", ErrRegistrationClosed, bytes.TrimSpace(msg))
	case res.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("lambdaext: register %s: HTTP %d: %s", name, res.StatusCode, bytes.TrimSpace(msg))
	}
	e.id = res.Header.Get(headerIdentifier)
	if e.id == "" {
		return nil, fmt.Errorf("lambdaext: register %s: no %s in the answer", name, headerIdentifier)
	}
	return e, nil
}

// Next tells Lambda the extension is done with the previous event (the
// first call: done initialising) and waits for the next one.
func (e *Extension) Next(ctx context.Context) (Event, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.base+"event/next", nil)
	if err != nil {
		return Event{}, err
	}
	req.Header.Set(headerIdentifier, e.id)
	res, err := e.client.Do(req)
	if err != nil {
		return Event{}, fmt.Errorf("lambdaext: next: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(res.Body, 1024))
		return Event{}, fmt.Errorf("lambdaext: next: HTTP %d: %s", res.StatusCode, bytes.TrimSpace(msg))
	}
	var ev Event
	if err := json.NewDecoder(res.Body).Decode(&ev); err != nil {
		return Event{}, fmt.Errorf("lambdaext: next: %w", err)
	}
	return ev, nil
}

// Run loops on event/next until ctx ends or the API fails. For each INVOKE
// it calls done(event) and asks for the next event only once done returns:
// the invocation stays open (the environment is neither frozen nor reused)
// until then. The first next is the end of this extension's Init.
func (e *Extension) Run(ctx context.Context, done func(Event)) error {
	for {
		ev, err := e.Next(ctx)
		if err != nil {
			return err
		}
		if ev.EventType == "INVOKE" {
			done(ev)
		}
	}
}
