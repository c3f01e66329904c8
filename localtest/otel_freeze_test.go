//go:build unix && mcpfn_otel

package localtest_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/internal/otlpstandin"
	"github.com/mcpfn/mcpfn/localtest/internal/faulty"
)

// Spans are never lost to a frozen environment: the OTLP span of a call
// is exported before the environment can freeze — with the audit after the
// response (decision 0023), after the answer but before the function's
// extension lets the invocation end. The test invokes a function through
// the Invoke API (its _meta.traceparent becomes the parent, since no X-Ray
// header reaches it), freezes the function's processes the moment the
// environment is released, as Lambda may, and finds the span already in
// otlp.jsonl. It needs the tracing flavour: go test -tags mcpfn_otel.
func TestSpanExportedBeforeTheFreeze(t *testing.T) {
	clientTrace, clientSpan := audit.W3CTraceID(audit.NewTraceID(time.Now())), audit.NewSpanID()
	payload, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{
		"name": faulty.Name, "arguments": map[string]any{"mode": faulty.ModeOK},
		"_meta": map[string]any{"traceparent": fmt.Sprintf("00-%s-%s-01", clientTrace, clientSpan)}}})
	out, err := lambdaClient().Invoke(t.Context(), &lambda.InvokeInput{FunctionName: aws.String(faultySingleFunction), Payload: payload})
	if err != nil || out.FunctionError != nil {
		t.Fatalf("%v %v", err, out)
	}
	if err := stack.Settle(t.Context()); err != nil {
		t.Fatal(err)
	}
	thaw, err := stack.Freeze(faultySingleFunction)
	if err != nil {
		t.Fatal(err)
	}
	defer thaw()
	var found []otlpstandin.Span
	for _, spans := range readOTLP(t) {
		for _, s := range spans {
			if s.TraceID == clientTrace && s.ParentSpanID == clientSpan {
				found = append(found, s)
			}
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans of the call in otlp.jsonl once the invocation had ended, want 1", len(found))
	}
	if s := found[0]; s.Kind != "server" || s.Attributes["gen_ai.tool.name"] != faulty.Name || s.Resource["service.name"] != faultySingleFunction {
		t.Errorf("span %+v", s)
	}
}
