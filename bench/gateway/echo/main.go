// Command echo is the one function both gateways of `make bench-gateway`
// forward to, run under the Lambda Runtime Interface Emulator: a bare
// aws-lambda-go handler that answers the text argument it was given.
//
// It reads the arguments from either request shape — the mcpfn envelope
// (params.arguments) or the bare forwarder's payload (the MCP call's
// params: arguments at the top) — and answers an mcpfn envelope response,
// {"mcpfn":"1","result":<CallToolResult>}, whose result both gateways read
// the same way. It verifies no call token and writes no audit row on
// purpose: what a tool function costs is `make bench-lambda`'s subject;
// here the function must cost the same behind either gateway, so the
// difference between them is the gateways' alone.
package main

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mcpfn/mcpfn/wire"
)

type request struct {
	Params *struct {
		Arguments json.RawMessage `json:"arguments"`
	} `json:"params"`
	Arguments json.RawMessage `json:"arguments"`
}

type textContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type result struct {
	Content           []textContent   `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
}

type response struct {
	Version string `json:"mcpfn"`
	Result  result `json:"result"`
}

func echo(_ context.Context, in request) (response, error) {
	args := in.Arguments
	if in.Params != nil {
		args = in.Params.Arguments
	}
	var a struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return response{}, errors.New("echo: the arguments are not {\"text\": string}")
	}
	return response{Version: wire.EnvelopeVersion, Result: result{
		Content:           []textContent{{Type: "text", Text: a.Text}},
		StructuredContent: args,
	}}, nil
}

func main() { lambda.Start(echo) }
