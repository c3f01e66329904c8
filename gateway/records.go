package gateway

import (
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"

	"github.com/mcpfn/mcpfn/taskstore"
)

// Task records are untrusted input (DESIGN §7, decision 0033): the tasks
// table is shared with the tool functions, whose roles write their own
// tasks' run attributes. The gateway seals each task it creates — a MAC
// over its id, owner, tool, function, call id, params and lifetime — with
// a key derived from its own secret (GatewaySessionKey, which only the
// gateway's role may read), and acts on a record only once it verifies
// (taskstore.Store.Sealed). What it then acts with comes from its own
// configuration: the tool's definition and function from the catalog, the
// caller's scopes checked again on every resume (tasks.go).

// newRecordKey derives the task-record key from a version of the gateway's
// secret: the same secret as the session ids, another key.
func newRecordKey(secret []byte) ([]byte, error) {
	return hkdf.Key(sha256.New, secret, nil, "mcpfn task record v1", 32)
}

// recordKeysOf derives the record keys of the secret's versions, current
// (which seals) first; a previous version too short to use is skipped.
func recordKeysOf(secrets [][]byte) (taskstore.RecordKeys, error) {
	var keys [][]byte
	for i, s := range secrets {
		if _, err := newSessionKey(s); err != nil { // the same length rule
			if i == 0 {
				return nil, err
			}
			continue
		}
		k, err := newRecordKey(s)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return taskstore.NewRecordKeys(keys...)
}

// randomRecordKeys is a key of this process only: right for one local
// gateway, refused on Lambda (loadSessionKeys).
func randomRecordKeys() taskstore.RecordKeys {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return taskstore.RecordKeys{k}
}
