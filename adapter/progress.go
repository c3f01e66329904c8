package adapter

import (
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/mcpfn/mcpfn/wire"
)

// Progress reports how far the call has got: done of total (total ≤ 0:
// unknown), with an optional message. It never blocks for long and never
// fails the call.
//
// Where it goes depends on how the call was made: a call whose client sent
// a progress token and whose gateway relays a stream (the envelope's
// Stream) becomes a progress frame, relayed as notifications/progress; a
// task run becomes the task's statusMessage (the Tasks extension has no
// progress notifications); any other call ignores it. Reports are
// throttled — a burst of [ProgressBurst], then [ProgressRate] a second —
// and the excess is coalesced: the latest report waits for the next slot,
// and the last one is always sent before the result.
func (c *Call) Progress(done, total float64, message string) {
	if n := c.notes; n != nil {
		n.progress(done, total, message)
	}
}

// Log sends a log message (MCP notifications/message) with level — debug,
// info, notice, warning, error, critical, alert or emergency — and data,
// any JSON value. It is a no-op unless the client asked for log messages
// at level or below (a streamed call whose request carried a log level);
// task runs send none (the Tasks extension does not support them). Log
// messages share the progress throttle; one without a slot is dropped, not
// queued.
func (c *Call) Log(level string, data any) {
	if n := c.notes; n != nil {
		n.log(level, data)
	}
}

// The throttle of progress and log frames: enough for a handler's few
// milestones at once, never a flood.
const (
	ProgressBurst = 10
	ProgressRate  = 5 // per second
	// statusInterval is the least time between two statusMessage writes
	// of a task run (each is a DynamoDB write).
	statusInterval = 2 * time.Second
)

// logLevels orders MCP's logging levels (RFC 5424 severities).
var logLevels = map[string]int{"debug": 0, "info": 1, "notice": 2, "warning": 3, "error": 4, "critical": 5, "alert": 6, "emergency": 7}

// notifier carries one call's progress and log reports to the stream or the
// task record. Its emissions are serialised by mu, so frames reach the
// stream whole and in order.
type notifier struct {
	mu     sync.Mutex
	closed bool
	logger string

	frames   *wire.StreamWriter // nil: not streaming
	progOK   bool               // the client sent a progress token
	minLevel int                // log frames at this level or above; -1: none
	fb       bucket

	status func(message string) // a task run's statusMessage write; nil: none
	sb     bucket
}

// newNotifier returns the notifier of a call, or nil when nothing would be
// relayed.
func newNotifier(tool string, req *wire.StreamRequest, frames *wire.StreamWriter) *notifier {
	if req == nil || frames == nil {
		return nil
	}
	n := &notifier{logger: tool, frames: frames, progOK: req.Progress, minLevel: -1,
		fb: bucket{rate: ProgressRate, burst: ProgressBurst}}
	if lvl, ok := logLevels[req.LogLevel]; ok {
		n.minLevel = lvl
	}
	if !n.progOK && n.minLevel < 0 {
		return nil
	}
	return n
}

// forTask returns a notifier whose progress becomes the task's status
// message, written by write.
func forTask(write func(message string)) *notifier {
	return &notifier{minLevel: -1, status: write, sb: bucket{rate: 1 / statusInterval.Seconds(), burst: 1}}
}

func (n *notifier) progress(done, total float64, message string) {
	if math.IsNaN(done) || math.IsInf(done, 0) || math.IsNaN(total) || math.IsInf(total, 0) {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	if n.status != nil {
		msg := statusText(done, total, message)
		n.sb.offer(&n.mu, func() { n.status(msg) }, true)
		return
	}
	if n.progOK {
		f := wire.ProgressFrame(done, total, message)
		n.fb.offer(&n.mu, func() { _ = n.frames.Frame(f) }, true)
	}
}

// statusText is a progress report as a task's statusMessage.
func statusText(done, total float64, message string) string {
	s := fmt.Sprintf("%g", done)
	if total > 0 {
		s += fmt.Sprintf("/%g", total)
	}
	if message != "" {
		s += ": " + message
	}
	return s
}

func (n *notifier) log(level string, data any) {
	lvl, ok := logLevels[level]
	if !ok || n.frames == nil || n.minLevel < 0 || lvl < n.minLevel {
		return
	}
	b, err := json.Marshal(data)
	if err != nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	f := wire.LogFrame(level, n.logger, b)
	n.fb.offer(&n.mu, func() { _ = n.frames.Frame(f) }, false)
}

// close flushes the last coalesced progress frame and ends the notifier:
// called when the call ends, before its result is written. A task's
// pending status message is dropped: the outcome replaces it.
func (n *notifier) close() {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.closed = true
	n.fb.flush(true)
	n.sb.flush(false)
}

// bucket is a token bucket whose excess is coalesced (the latest waiting
// emission replaces the one before) or dropped. Its methods run with the
// notifier's mutex held.
type bucket struct {
	rate, burst float64
	tokens      float64
	last        time.Time
	started     bool
	pending     func()
	timer       *time.Timer
}

func (b *bucket) refill(now time.Time) {
	if !b.started {
		b.started, b.tokens, b.last = true, b.burst, now
		return
	}
	b.tokens = math.Min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	b.last = now
}

// offer emits now if a token is free; otherwise coalesces emit (the latest
// wins, sent when a token frees up) or drops it.
func (b *bucket) offer(mu *sync.Mutex, emit func(), coalesce bool) {
	if b.pending != nil {
		if coalesce {
			b.pending = emit // keeps its place: order is preserved
		}
		return
	}
	b.refill(time.Now())
	if b.tokens >= 1 {
		b.tokens--
		emit()
		return
	}
	if !coalesce {
		return
	}
	b.pending = emit
	b.schedule(mu)
}

// schedule arms the timer for the moment a token is free.
func (b *bucket) schedule(mu *sync.Mutex) {
	wait := time.Duration((1 - b.tokens) / b.rate * float64(time.Second))
	b.timer = time.AfterFunc(wait, func() {
		mu.Lock()
		defer mu.Unlock()
		if b.pending == nil {
			return
		}
		b.refill(time.Now())
		if b.tokens < 1 {
			b.schedule(mu)
			return
		}
		b.tokens--
		emit := b.pending
		b.pending = nil
		emit()
	})
}

// flush stops the timer and sends (send) or drops the waiting emission.
func (b *bucket) flush(send bool) {
	if b.timer != nil {
		b.timer.Stop()
	}
	if emit := b.pending; emit != nil {
		b.pending = nil
		if send {
			emit()
		}
	}
}
