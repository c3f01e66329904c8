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

// validID reports whether id can be a task id. Ids come from clients
// (tasks/get, tasks/cancel, tasks/update): anything else is not found
// without asking DynamoDB, which would refuse an over-long key with a
// validation error rather than answer "no item".
func validID(id string) bool {
	if len(id) != 22 {
		return false
	}
	for _, r := range id {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}
