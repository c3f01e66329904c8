package audit

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"time"
)

// NewSpanID returns a fresh X-Ray segment id: 16 lowercase hex digits from
// crypto/rand. Span ids must be unique across concurrent calls in one process
// and across processes, so a seeded math/rand source is not good enough.
func NewSpanID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}

// NewTraceID returns a fresh X-Ray trace id for a call that arrived without a
// trace header: "1-<8 hex digits of t's epoch seconds>-<24 random hex digits>".
// X-Ray rejects trace ids whose time part is far from the segment's time, so
// pass the call's start time.
func NewTraceID(t time.Time) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	epoch := strconv.FormatInt(t.Unix(), 16)
	for len(epoch) < 8 {
		epoch = "0" + epoch
	}
	return "1-" + epoch + "-" + hex.EncodeToString(b[:])
}

// NewAttemptID returns a fresh id for one execution of a call (16 hex digits
// from crypto/rand). A retried invocation of the same call gets another.
func NewAttemptID() string { return NewSpanID() }
