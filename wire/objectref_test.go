package wire_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/wire"
)

// TestObjectRefCheckRefusesWhatIsNotUnderItsPrefix: a reader accepts a
// reference only in its bucket, under the prefix it expects, with a key
// that is a plain key and a SHA-256 of 64 hex digits.
func TestObjectRefCheckRefusesWhatIsNotUnderItsPrefix(t *testing.T) {
	sha := strings.Repeat("ab", 32)
	ok := wire.ObjectRef{Bucket: "b", Key: wire.ResultKey("t", "c1", "a1"), VersionID: "v", Size: 3, SHA256: sha}
	if err := ok.Check("b", "t/results/c1/"); err != nil {
		t.Fatalf("a result under its call: %v", err)
	}
	for name, r := range map[string]wire.ObjectRef{
		"another bucket":    {Bucket: "x", Key: ok.Key, SHA256: sha},
		"another tool":      {Bucket: "b", Key: wire.ResultKey("u", "c1", "a1"), SHA256: sha},
		"another call":      {Bucket: "b", Key: wire.ResultKey("t", "c2", "a1"), SHA256: sha},
		"the prefix itself": {Bucket: "b", Key: "t/results/c1/", SHA256: sha},
		"a dot-dot key":     {Bucket: "b", Key: "t/results/c1/../../u/results/x", SHA256: sha},
		"a double slash":    {Bucket: "b", Key: "t/results/c1//x", SHA256: sha},
		"a short sha256":    {Bucket: "b", Key: ok.Key, SHA256: "abcd"},
		"a base64 sha256":   {Bucket: "b", Key: ok.Key, SHA256: "q83vEjRWeJA="},
		"a negative size":   {Bucket: "b", Key: ok.Key, SHA256: sha, Size: -1},
		"an args key":       {Bucket: "b", Key: wire.ArgsKey("t", "c1"), SHA256: sha},
		"no bucket named":   {Bucket: "", Key: ok.Key, SHA256: sha},
	} {
		if err := r.Check("b", "t/results/c1/"); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := ok.Check("", "t/results/c1/"); err == nil {
		t.Error("a reader without a bucket accepted a reference")
	}
	if got := wire.BlobKey(ok.Key, 2); got != "t/results/c1/a1.2" {
		t.Errorf("BlobKey = %s", got)
	}
}

// TestEnvelopeCarriesReferences: params.argumentsRef and the answer's
// resultRef round-trip, and an envelope without them is unchanged on the
// wire.
func TestEnvelopeCarriesReferences(t *testing.T) {
	ref := &wire.ObjectRef{Bucket: "b", Key: "t/args/c1", VersionID: "v1", Size: 10, SHA256: strings.Repeat("0", 64), ContentType: "application/json"}
	b, _ := json.Marshal(wire.Envelope{Version: "1", CallID: "c1", Params: wire.EnvelopeParams{Name: "t", ArgumentsRef: ref}})
	if !strings.Contains(string(b), `"params":{"name":"t","argumentsRef":{"bucket":"b","key":"t/args/c1","versionId":"v1","size":10,"sha256":"`) {
		t.Errorf("envelope %s", b)
	}
	var env wire.Envelope
	if err := json.Unmarshal(b, &env); err != nil || env.Params.ArgumentsRef == nil || *env.Params.ArgumentsRef != *ref {
		t.Errorf("round trip: %+v %v", env.Params.ArgumentsRef, err)
	}
	b, _ = json.Marshal(wire.EnvelopeResponse{Version: "1", CallID: "c1", ResultRef: ref})
	if string(b) != `{"mcpfn":"1","callId":"c1","resultRef":{"bucket":"b","key":"t/args/c1","versionId":"v1","size":10,"sha256":"0000000000000000000000000000000000000000000000000000000000000000","contentType":"application/json"}}` {
		t.Errorf("response %s", b)
	}
	b, _ = json.Marshal(wire.Envelope{Version: "1", CallID: "c1", Params: wire.EnvelopeParams{Name: "t", Arguments: json.RawMessage(`{}`)}})
	if strings.Contains(string(b), "Ref") {
		t.Errorf("an envelope without references mentions them: %s", b)
	}
}
