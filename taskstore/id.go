package taskstore

import (
	"crypto/rand"
	"encoding/base64"
)

// newID returns 128 random bits, base64url without padding: 22 characters
// that never contain '#', so no task id collides with a cancel marker key.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b[:])
}
