package wire

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// The claim check (issue 22, docs/decisions/0037): what does not fit an
// invocation's payload, an answer or a task record travels as an object in
// the payloads bucket, and the envelope, the answer or the record carries
// an ObjectRef to it.
//
//   - Arguments the gateway stored: params.argumentsRef of the envelope,
//     under "<tool>/args/<callId>", in the canonical form the call token
//     digests (calltoken.Canonical), so their SHA-256 is the token's
//     argument digest.
//   - A result the function stored: the answer's resultRef (or a task
//     record's), under "<tool>/results/<callId>/<attemptId>": the
//     CallToolResult as the function serialized it, in which a large binary
//     block may stand as a [StoredBlock] naming an object of its own
//     ("<tool>/results/<callId>/<attemptId>.<n>", the raw bytes).

// ObjectRef names one stored object version and what its bytes must be.
// Nothing in it is trusted by its reader: the version is read and hashed
// (or S3's checksum of it compared) before anything acts on the bytes, and
// the key must lie under the prefix the reader expects.
type ObjectRef struct {
	Bucket string `json:"bucket"`
	Key    string `json:"key"`
	// VersionID pins the version (the payloads bucket is versioned): an
	// object written again under the same key is another version, never
	// the one referenced.
	VersionID string `json:"versionId,omitempty"`
	// Size is the object's length in bytes.
	Size int64 `json:"size"`
	// SHA256 is the hex SHA-256 of the object's bytes.
	SHA256 string `json:"sha256"`
	// ContentType is the object's media type: application/json for
	// arguments and results, a block's mimeType for a stored blob.
	ContentType string `json:"contentType,omitempty"`
}

// Key prefixes under a tool's name in the payloads bucket.
const (
	ArgsPrefix    = "args/"
	ResultsPrefix = "results/"
)

// ArgsKey is where the gateway stores a call's arguments.
func ArgsKey(tool, callID string) string { return tool + "/" + ArgsPrefix + callID }

// ResultKey is where an execution (attemptID) of a call stores its result.
func ResultKey(tool, callID, attemptID string) string {
	return tool + "/" + ResultsPrefix + callID + "/" + attemptID
}

// BlobKey is where the n-th blob moved out of a stored result goes.
func BlobKey(resultKey string, n int) string { return fmt.Sprintf("%s.%d", resultKey, n) }

// Check reports whether r is well formed and lies in bucket under prefix:
// a reader refuses any other reference before it reads anything.
func (r *ObjectRef) Check(bucket, prefix string) error {
	switch {
	case r == nil:
		return errors.New("no object reference")
	case bucket == "" || r.Bucket != bucket:
		return fmt.Errorf("the object reference names bucket %q, not the payloads bucket", r.Bucket)
	case !strings.HasPrefix(r.Key, prefix) || len(r.Key) == len(prefix):
		return fmt.Errorf("the object reference's key %q is not under %q", r.Key, prefix)
	case strings.Contains(r.Key, "//") || strings.Contains(r.Key, "/../") || strings.HasSuffix(r.Key, "/.."):
		return fmt.Errorf("the object reference's key %q is not a plain key", r.Key)
	case r.Size < 0:
		return errors.New("the object reference has a negative size")
	}
	if _, err := r.Sum(); err != nil {
		return err
	}
	return nil
}

// Sum is r's SHA-256 as bytes.
func (r *ObjectRef) Sum() ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	b, err := hex.DecodeString(r.SHA256)
	if err != nil || len(b) != sha256.Size {
		return sum, fmt.Errorf("the object reference's sha256 %q is not 64 hex digits", r.SHA256)
	}
	copy(sum[:], b)
	return sum, nil
}

// StoredBlockType is the content type of a [StoredBlock]. It is no MCP
// content type: a client that ever saw one would refuse it, which is the
// point — the gateway replaces every one before it answers.
const StoredBlockType = "mcpfn/object"

// StoredBlock stands, in a stored result, for a binary content block whose
// bytes are an object of their own (raw, with the block's mimeType as
// content type): so that the gateway can answer an MCP resource_link to the
// bytes themselves, or put them back inline (base64) when the answer is
// small enough. The result's own SHA-256 covers Object's, which covers the
// bytes.
type StoredBlock struct {
	Type string `json:"type"` // StoredBlockType
	// Block is the MCP content type the bytes came from: image, audio or
	// resource (an embedded resource with a blob).
	Block    string `json:"block"`
	MimeType string `json:"mimeType,omitempty"`
	// URI is the embedded resource's uri (Block "resource").
	URI string `json:"uri,omitempty"`
	// Link: the tool asked for a resource_link whatever the size.
	Link   bool      `json:"link,omitempty"`
	Object ObjectRef `json:"object"`
}
