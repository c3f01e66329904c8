package adapter

import (
	"context"
	"fmt"
	"time"
)

// Cancellation: a caller's cancel (tasks/cancel for a task,
// notifications/cancelled for a synchronous call) is a record in the tasks
// table. While the handler runs the adapter polls that record every watch
// interval and, when it says cancelled, cancels the handler's context with
// errCallCancelled. A synchronous call is polled only after the first
// interval, so a short call costs no read. What a cancel can and cannot stop
// is in docs/long-running.md.

// errCallCancelled is the cause of a call context its caller cancelled. It
// is a context.Canceled, so code that tests for that still sees one.
var errCallCancelled = fmt.Errorf("the caller cancelled the call: %w", context.Canceled)

// DefaultWatchInterval is how often a running call's cancel record is read
// (MCPFN_TASK_WATCH_INTERVAL overrides it).
const DefaultWatchInterval = 2 * time.Second

// markerSkew is how much earlier than the call's start a cancel marker may
// be dated and still cancel it: the gateway's clock and the function's may
// differ a little.
const markerSkew = time.Second

// cancelledError is the CANCELLED a cancelled call ends with. Once its
// handler has started a destructive tool may have taken effect.
func (f *Function) cancelledError(stage Stage, cause error) *Error {
	e := NewError(CodeCancelled, "the call was cancelled by its caller")
	if f.tool.destructive && (stage == StageHandler || stage == StageAfterHandle) {
		e = NewError(CodeCancelled, "the call was cancelled by its caller; its outcome is unknown").
			WithHint("this tool is destructive and the call may have taken effect: check before calling it again")
	}
	return e.WithCause(cause)
}

// watchCancel cancels the call's context when cancelled is closed, until
// stop is called (when the handler's part of the call is over).
func (r *callRun) watchCancel(cancelled <-chan struct{}, wctx context.Context) {
	go func() {
		select {
		case <-cancelled:
			r.cancel(errCallCancelled)
		case <-wctx.Done():
		}
	}()
}

// watchSyncCancel starts watching a synchronous call's cancel marker, when
// the envelope names one and the function has a tasks table. The owner may
// be empty (an unverified caller): the gateway names a marker for one only
// under a key no other caller shares (a call id, a session it minted).
func (r *callRun) watchSyncCancel(wctx context.Context) {
	m, st := r.d.cancel, r.f.opts.tasks.store
	if m == nil || st == nil || m.Request == "" {
		return
	}
	r.watchCancel(st.WatchCall(wctx, m.Owner, m.Request, r.call.StartedAt.Add(-markerSkew), r.f.opts.tasks.interval()), wctx)
}
