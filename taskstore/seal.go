package taskstore

import (
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"strconv"
)

// A task's record is untrusted input to the gateway (DESIGN §7, decision
// 0033): the table is shared with the tool functions, whose roles write
// their own tasks' run attributes, and with whoever else can write
// DynamoDB. So the gateway seals what must never change after creation —
// the id, the owner, the tool, the function, the call id, the params
// (their SHA-256) and the task's lifetime — with a MAC under a key no tool
// holds, and a sealed store refuses a record whose seal does not verify
// ([ErrTampered]) before anything acts on it.

// Sealer MACs the fixed fields of a task record. The gateway's holds its
// record keys (derived from the GatewaySessionKey secret); the first key
// seals, every key verifies (a rotation's previous key).
type Sealer interface {
	Seal(fixed []byte) []byte
	Verify(fixed, seal []byte) bool
}

// RecordKeys is a [Sealer] of HMAC-SHA256 keys: the first seals, each
// verifies.
type RecordKeys [][]byte

// MinRecordKeyBytes is the shortest key RecordKeys accepts.
const MinRecordKeyBytes = 32

// NewRecordKeys checks keys: at least one, each at least 32 bytes.
func NewRecordKeys(keys ...[]byte) (RecordKeys, error) {
	if len(keys) == 0 {
		return nil, errors.New("taskstore: no record key")
	}
	for _, k := range keys {
		if len(k) < MinRecordKeyBytes {
			return nil, fmt.Errorf("taskstore: a record key must be at least %d bytes, got %d", MinRecordKeyBytes, len(k))
		}
	}
	return RecordKeys(keys), nil
}

// Seal is the MAC of fixed under the first key.
func (ks RecordKeys) Seal(fixed []byte) []byte { return recordMAC(ks[0], fixed) }

// Verify reports whether seal is fixed's MAC under any of the keys.
func (ks RecordKeys) Verify(fixed, seal []byte) bool {
	ok := false
	for _, k := range ks {
		// Every key is tried, so the time taken says nothing of which one
		// matched.
		if hmac.Equal(seal, recordMAC(k, fixed)) {
			ok = true
		}
	}
	return ok
}

func recordMAC(key, fixed []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(fixed)
	return m.Sum(nil)
}

// Sealed returns a store that seals the tasks it creates with k and
// refuses, as [ErrTampered], a record that does not verify in every
// owner-facing operation (Get, Cancel, Update). The adapter's store is
// unsealed: a run is bound by its call token, not by the record.
func (s *Store) Sealed(k Sealer) *Store {
	c := *s
	c.sealer = k
	return &c
}

// fixed is the canonical encoding of what a task's seal covers: each field
// length-prefixed, so no two records encode alike.
func (it *item) fixed() []byte {
	params := sha256.Sum256([]byte(it.Params))
	b := []byte("mcpfn task record v1\n")
	for _, f := range []string{
		it.TaskID, it.Owner, it.Tool, it.Function, it.CallID, string(params[:]),
		strconv.FormatInt(it.CreatedAt, 10), strconv.FormatInt(it.TTLMs, 10),
		strconv.FormatInt(it.ExpiresAt, 10), strconv.FormatInt(it.PollIntervalMs, 10),
	} {
		b = strconv.AppendInt(b, int64(len(f)), 10)
		b = append(b, ':')
		b = append(b, f...)
	}
	return b
}

// verified reports whether it may be acted on: always for an unsealed
// store; for a sealed one, when its seal verifies and its id names its
// tool.
func (s *Store) verified(it *item) bool {
	if s.sealer == nil {
		return true
	}
	tool, ok := ToolOf(it.TaskID)
	return ok && tool == it.Tool && len(it.Seal) > 0 && s.sealer.Verify(it.fixed(), it.Seal)
}
