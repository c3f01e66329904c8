package adapter_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/adapter"
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
	})
}
