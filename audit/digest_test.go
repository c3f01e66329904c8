package audit_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/calltoken"
)

func hexSHA(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestTheRowProvesTheBytes: a row records the size and SHA-256 of the
// arguments in the canonical form the call token digests (absent ones as
// {}), of the result as serialized, and the objects they were stored as;
// a row whose writer set them from a reference keeps them; the fallback
// line carries them too, never the raw bytes.
func TestTheRowProvesTheBytes(t *testing.T) {
	e := newEnv(t)
	var fb bytes.Buffer
	a := e.auditor(t, audit.Config{Fallback: &fb})
	args := json.RawMessage(`{"b":2, "a":"x"}`)
	result := json.RawMessage(`{"content":[{"type":"text","text":"ok"}]}`)

	inline := baseRow("digest-inline")
	inline.ReceivedArgs, inline.Result = args, result
	a.Record(context.Background(), inline)
	canon := calltoken.Canonical(args)
	if got, ok, _ := a.CallRow(t.Context(), inline.Tool, inline.CallID); !ok ||
		got.ArgsBytes != int64(len(canon)) || got.ArgsSHA256 != hexSHA(canon) ||
		got.ResultBytes != len(result) || got.ResultSHA256 != hexSHA(result) || got.ArgsObject != nil || got.ResultObject != nil {
		t.Fatalf("inline row = %+v", got)
	}

	stored := baseRow("digest-stored")
	stored.ReceivedArgs = json.RawMessage{} // absent arguments
	stored.ResultBytes, stored.ResultSHA256 = 12345, hexSHA([]byte("the stored result"))
	stored.ResultObject = &audit.Object{Bucket: "payloads", Key: "t/results/digest-stored/a1", VersionID: "v1"}
	stored.Result = result // the writer's figures stand
	a.Record(context.Background(), stored)
	got, ok, _ := a.CallRow(t.Context(), stored.Tool, stored.CallID)
	if !ok || got.ArgsSHA256 != hexSHA([]byte("{}")) || got.ArgsBytes != 2 ||
		got.ResultBytes != 12345 || got.ResultSHA256 != stored.ResultSHA256 || got.ResultObject == nil || *got.ResultObject != *stored.ResultObject {
		t.Fatalf("stored row = %+v", got)
	}

	// Unwritable: the fallback line has the figures, not the bytes.
	down := e.auditor(t, audit.Config{Client: clientFor("http://" + closedPort(t)), Fallback: &fb, MaxAttempts: 1})
	lost := baseRow("digest-lost")
	lost.ReceivedArgs, lost.Result = args, result
	down.Record(context.Background(), lost)
	line := fb.String()
	if !bytes.Contains([]byte(line), []byte(`"argsSha256":"`+hexSHA(canon)+`"`)) || !bytes.Contains([]byte(line), []byte(`"resultSha256":"`+hexSHA(result)+`"`)) ||
		bytes.Contains([]byte(line), []byte(`"text":"ok"`)) {
		t.Errorf("fallback line %s", line)
	}
}
