package wire_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/mcpfn/mcpfn/wire"
)

func TestParseTraceHeaderInventsNothing(t *testing.T) {
	got := wire.ParseTraceHeader("Root=1-5759e988-bd862e3fe1be46a994272793; Sampled=1")
	if got.Root != "1-5759e988-bd862e3fe1be46a994272793" || got.Parent != "" || got.Sampled != "1" || !got.WellFormed() {
		t.Fatalf("trace = %+v", got)
	}
	for _, h := range []string{"", "Root=Bearer sk-live-0123456789abcdef", "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=xyz"} {
		if wire.ParseTraceHeader(h).WellFormed() {
			t.Errorf("%q is well formed", h)
		}
	}
}

// TestClientContextRoundTrips: what EncodeClientContext writes, Decode
// reads back; what Lambda refuses (not base64, not a JSON object), Decode
// refuses.
func TestClientContextRoundTrips(t *testing.T) {
	h, err := wire.EncodeClientContext(&lambdacontext.ClientContext{Custom: map[string]string{wire.AgentCoreToolName: "t___tool"}})
	if err != nil {
		t.Fatal(err)
	}
	cc, err := wire.DecodeClientContext(h)
	if err != nil || cc.Custom[wire.AgentCoreToolName] != "t___tool" {
		t.Fatalf("decoded %+v, %v", cc, err)
	}
	for _, bad := range []string{"%%%", "bm90IGpzb24="} {
		if _, err := wire.DecodeClientContext(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestErrorBodyDropsDetailsThatCannotBeMarshalled: the code and message
// still reach the caller.
func TestErrorBodyDropsDetailsThatCannotBeMarshalled(t *testing.T) {
	res := wire.ErrorResult(wire.ErrorBody{Error: "INTERNAL_SERVER_ERROR", Message: "m", Details: func() {}})
	var r struct {
		Content []struct{ Text string } `json:"content"`
		IsError bool                    `json:"isError"`
	}
	if err := json.Unmarshal(res, &r); err != nil || !r.IsError || len(r.Content) != 1 {
		t.Fatalf("result %s: %v", res, err)
	}
	if r.Content[0].Text != `{"error":"INTERNAL_SERVER_ERROR","message":"m","retryable":false}` {
		t.Fatalf("body = %s", r.Content[0].Text)
	}
}

func TestRPCErrorJSONAnswersAnUnreadableIDWithNull(t *testing.T) {
	got := string(wire.RPCErrorJSON(nil, wire.RPCParseError, "bad"))
	if got != `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad"}}` {
		t.Fatalf("got %s", got)
	}
	if id := wire.NewCallID(); len(id) != 32 || strings.Trim(id, "0123456789abcdef") != "" {
		t.Fatalf("call id %q", id)
	}
}
