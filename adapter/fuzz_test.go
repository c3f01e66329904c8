package adapter_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/wire"
)

// FuzzInvoke feeds arbitrary payloads (and, for the AgentCore path, an
// arbitrary tool name and propagated headers) through the Lambda entry point.
// Whatever arrives, the function answers with JSON and never panics. The
// committed corpus in testdata/fuzz/FuzzInvoke runs in every `go test`.
func FuzzInvoke(f *testing.F) {
	f.Add([]byte(`{"mcpfn":"1","callId":"c","params":{"name":"widget_update","arguments":{"entityId":"w"}}}`), "", "")
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"widget_update","arguments":{"entityId":"w"}}}`), "", "")
	f.Add([]byte(`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"widget_update"}},{"jsonrpc":"2.0","method":"ping"}]`), "", "")
	f.Add([]byte(`{"entityId":"w"}`), "t___widget_update", `{"a":"b"}`)
	f.Add([]byte(`{"entityId":"w"}`), "widget_update", `not json`)
	f.Add([]byte(`{"mcpfn":"9"}`), "", "")
	// Envelope versions: only the JSON string "1" is version 1.
	for _, v := range []string{`1`, `1.0`, `"1.0"`, `null`, `""`, `" 1"`, `"\u0031"`, `["1"]`, `true`} {
		f.Add([]byte(`{"mcpfn":`+v+`,"callId":"c","params":{"name":"widget_update","arguments":{"entityId":"w"}}}`), "", "")
	}
	f.Add([]byte("\xff\xfe"), "", "")
	f.Add([]byte(`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[`), "", "")
	tool := widgetTool(f)
	f.Fuzz(func(t *testing.T, payload []byte, acTool, acHeaders string) {
		rec := newRecorder()
		fn := newFunction(tool, adapter.WithHooks(rec.hooks()), quietLogger())
		// A short deadline: generated arguments may ask the handler to sleep.
		li := lambdaInvoke{Timeout: 700 * time.Millisecond}
		if acTool != "" {
			li.Custom = map[string]string{"bedrockAgentCoreToolName": acTool, "bedrockAgentCorePropagatedHeaders": acHeaders}
		}
		out := invoke(t, fn, payload, li)
		if !json.Valid(out) {
			t.Fatalf("answer is not JSON: %q", out)
		}
		for _, o := range rec.done {
			if o.Err == nil && o.Stage != adapter.StageDone {
				t.Fatalf("failed call without an error: %+v", o)
			}
		}
		if acTool == "" && !versionIsString1(payload) {
			// An envelope of any other version never gets past decode.
			for _, o := range rec.done {
				if o.Stage != adapter.StageDecode || adapter.CodeOf(o.Err) != adapter.CodeBadRequest {
					t.Fatalf("an envelope whose version is not the string \"1\" got to %s (%v): %q", o.Stage, o.Err, payload)
				}
			}
		}
	})
}

// versionIsString1 reports whether payload is not an envelope at all, or an
// envelope whose "mcpfn" is the JSON string "1". The adapter decodes with
// another JSON library; both keep the last of duplicate keys.
func versionIsString1(payload []byte) bool {
	var keys map[string]json.RawMessage
	if json.Unmarshal(payload, &keys) != nil {
		return true // not an object: no envelope to judge
	}
	raw, ok := keys["mcpfn"]
	if !ok {
		return true
	}
	var v string
	return json.Unmarshal(raw, &v) == nil && v == wire.EnvelopeVersion
}
