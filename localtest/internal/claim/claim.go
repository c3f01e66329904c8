// Package claim is a tool for the local stack's tests of the claim check
// (issue 22): it answers a payload of the size it is asked for — random
// bytes as an embedded blob resource or an image, or text — so a result
// past Lambda's 6 MB answer or a task record's 350 KB goes through the
// payloads bucket; and it reports the size and SHA-256 of the data
// argument it received, so a test sees large arguments reach the handler
// byte for byte. It runs only locally, as an ExtraFunctions fixture
// (function/ is its Lambda main).
package claim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/mcpfn/mcpfn/adapter"
)

// Name is the tool's name: its payloads are under "claim_fixture/".
const Name = "claim_fixture"

// Input is what to answer.
type Input struct {
	// Size is the payload's size in bytes (0: none).
	Size int `json:"size,omitempty"`
	// Kind is blob (an embedded resource with a blob), image or text.
	Kind string `json:"kind,omitempty" jsonschema:"blob, image or text"`
	// Seed makes the payload: the same seed and size, the same bytes
	// ([Payload]).
	Seed string `json:"seed,omitempty"`
	// Link asks for the payload as a resource_link whatever its size.
	Link bool `json:"link,omitempty"`
	// Data is reported back as its size and SHA-256.
	Data string `json:"data,omitempty"`
	// Hold, a URL, is fetched before the handler answers: the test
	// decides when (an S3 outage in between, say).
	Hold string `json:"hold,omitempty"`
	// ID is recorded as the call's entityId dimension.
	ID string `json:"id,omitempty"`
}

// Report is the first block's text: what the handler received.
type Report struct {
	DataBytes  int    `json:"dataBytes"`
	DataSHA256 string `json:"dataSha256"`
}

// URI is the embedded resource's uri.
const URI = "fixture://claim/payload.bin"

// Payload is the payload of seed and size: random bytes, or for text
// lower-case letters.
func Payload(seed, kind string, size int) []byte {
	s := sha256.Sum256([]byte(seed))
	r := rand.NewChaCha8(s)
	b := make([]byte, size)
	_, _ = r.Read(b)
	if kind == "text" {
		for i := range b {
			b[i] = 'a' + b[i]%26
		}
	}
	return b
}

// SHA256 is the hex SHA-256 of b.
func SHA256(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Tool is the fixture's definition, shared by the gateway's catalog and
// the function.
func Tool() *adapter.Tool {
	return adapter.MustDefine(adapter.ToolDef[Input, adapter.Content]{
		Name:        Name,
		Description: "Test fixture: answers a payload of a given size; reports the size and SHA-256 of its data argument. Local stack only.",
		ReadOnly:    true,
		TaskSupport: adapter.TaskOptional,
		// Takes arguments as large as a Function URL request carries.
		MaxArgumentBytes: adapter.MaxArgumentBytesLimit,
		Timeout:          60 * time.Second,
		Handler:          handle,
	})
}

func handle(ctx context.Context, call *adapter.Call, in Input) (adapter.Content, error) {
	if in.ID != "" {
		call.SetDimension("entityId", in.ID)
	}
	report, _ := json.Marshal(Report{DataBytes: len(in.Data), DataSHA256: SHA256([]byte(in.Data))})
	out := adapter.Content{Blocks: []adapter.Block{adapter.Text(string(report))}}
	if in.Size > 0 {
		p := Payload(in.Seed, in.Kind, in.Size)
		var b adapter.Block
		switch in.Kind {
		case "text":
			b = adapter.Text(string(p))
		case "image":
			b = adapter.Image(p, "image/png")
		default:
			b = adapter.BlobResource(URI, "application/octet-stream", p)
		}
		if in.Link {
			b = b.AsLink()
		}
		out.Blocks = append(out.Blocks, b)
	}
	if in.Hold != "" {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, in.Hold, nil)
		if err != nil {
			return adapter.Content{}, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return adapter.Content{}, err
		}
		resp.Body.Close()
	}
	return out, nil
}
