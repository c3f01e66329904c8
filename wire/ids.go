package wire

import (
	"crypto/rand"
	"encoding/hex"
)

// NewCallID returns 128 random bits from crypto/rand as 32 lowercase hex
// digits. A signer makes one per tools/call and reuses it for every retry of
// that call, so a function's idempotent audit write keeps one row per call;
// a function makes one for a call that arrived without an id and without a
// Lambda request id.
func NewCallID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}
