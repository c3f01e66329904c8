// Package recent keeps the most recent items of an unbounded intake — the
// X-Ray and OTLP stand-ins' documents — in bounded memory.
//
// A stand-in writes everything it receives to a file (the record) and keeps
// only what its tests wait on in memory: the latest items, numbered. The
// numbers let a waiter resume where it left off across calls, and let it
// notice what it can no longer see (items that left the window), so a
// stand-in serving a long `make local` session or a soak holds the same
// memory after an hour as after a minute.
package recent

// Window holds the last Cap items added, each with its sequence number
// (the count of items added before it). It is not safe for concurrent use:
// its owner locks.
type Window[T any] struct {
	buf  []T    // ring, len(buf) == Cap once full
	head int    // index in buf of the oldest item once full
	next uint64 // sequence number of the next item added
	cap  int
}

// DefaultCap is the window a stand-in keeps unless told otherwise: enough
// for every document a test can be waiting on (the few calls it made just
// before), with room for the other tests running at the same time.
const DefaultCap = 4096

// New returns a window of capacity n (DefaultCap when n <= 0).
func New[T any](n int) *Window[T] {
	if n <= 0 {
		n = DefaultCap
	}
	return &Window[T]{cap: n}
}

// Cap is the window's capacity.
func (w *Window[T]) Cap() int { return w.cap }

// Add appends v, dropping the oldest item once the window is full.
func (w *Window[T]) Add(v T) {
	w.next++
	if len(w.buf) < w.cap {
		w.buf = append(w.buf, v)
		return
	}
	w.buf[w.head] = v
	w.head = (w.head + 1) % w.cap
}

// Next is the sequence number the next item added will get: the number of
// items ever added.
func (w *Window[T]) Next() uint64 { return w.next }

// Oldest is the sequence number of the oldest item still held.
func (w *Window[T]) Oldest() uint64 { return w.next - uint64(len(w.buf)) }

// Since returns, oldest first, the items held whose sequence number is at
// least seq, and the sequence number to ask for next time. Items from seq
// on that already left the window are skipped: dropped reports how many.
func (w *Window[T]) Since(seq uint64) (items []T, next uint64, dropped uint64) {
	oldest := w.Oldest()
	if seq < oldest {
		dropped, seq = oldest-seq, oldest
	}
	if seq >= w.next {
		return nil, w.next, dropped
	}
	skip := int(seq - oldest)
	items = make([]T, 0, len(w.buf)-skip)
	for i := skip; i < len(w.buf); i++ {
		items = append(items, w.buf[(w.head+i)%len(w.buf)])
	}
	return items, w.next, dropped
}

// All returns every item held, oldest first.
func (w *Window[T]) All() []T {
	items, _, _ := w.Since(0)
	return items
}

// Len is the number of items held.
func (w *Window[T]) Len() int { return len(w.buf) }

// Reset drops every item held; sequence numbers go on from where they
// were, so a waiter's position stays valid.
func (w *Window[T]) Reset() {
	w.buf, w.head = nil, 0
}

// Resize sets the capacity to n (DefaultCap when n <= 0), keeping the
// newest items that fit.
func (w *Window[T]) Resize(n int) {
	if n <= 0 {
		n = DefaultCap
	}
	items := w.All()
	if len(items) > n {
		items = items[len(items)-n:]
	}
	w.buf, w.head, w.cap = items, 0, n
}
