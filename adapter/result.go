package adapter

import (
	"encoding/json"
	"fmt"
)

// errorToolResult is the MCP CallToolResult of a failed call. The adapter
// writes its results itself rather than through go-sdk's types, so the wire
// shape is explicit and a call does not pay for the SDK's content machinery.
type errorToolResult struct {
	Content []textContent `json:"content"`
	IsError bool          `json:"isError"`
}

type textContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// errorResult is the isError result a model reads: a small JSON body
// {error, message, retryable, details?, hint?}.
func errorResult(e *Error) json.RawMessage {
	body, err := json.Marshal(e.body())
	if err != nil {
		// Details that cannot be marshalled are dropped, not fatal.
		b := e.body()
		b.Details = nil
		body, _ = json.Marshal(b)
	}
	out, _ := json.Marshal(errorToolResult{Content: []textContent{{Type: "text", Text: string(body)}}, IsError: true})
	return out
}

// successResult is step 7: the output must match the output schema, or the
// tool broke its own contract — INTERNAL_SERVER_ERROR, never the caller's
// validation error.
//
// validate is false only for the handler's own typed output under an
// inferred schema with no self-marshalling types (see Tool.outputTrusted):
// such a value matches its schema by construction.
func (f *Function) successResult(output any, validate bool) (json.RawMessage, error) {
	if c, ok := contentOf(output); ok {
		return f.contentResult(c)
	}
	raw, err := json.Marshal(output)
	if err != nil {
		return nil, NewError(CodeInternal, "Internal server error").WithCause(fmt.Errorf("output cannot be marshalled: %w", err))
	}
	if validate {
		var generic any
		if err := json.Unmarshal(raw, &generic); err != nil {
			return nil, NewError(CodeInternal, "Internal server error").WithCause(err)
		}
		if err := f.tool.outResolved.Validate(generic); err != nil {
			return nil, NewError(CodeInternal, "Internal server error").WithCause(fmt.Errorf("output does not match the output schema: %w", err))
		}
	}
	// The text content mirrors the structured output for clients that read
	// only text; assembled by hand to skip a second reflective marshal.
	text, _ := json.Marshal(string(raw))
	out := make([]byte, 0, len(text)+len(raw)+64)
	out = append(out, `{"content":[{"type":"text","text":`...)
	out = append(out, text...)
	out = append(out, `}],"structuredContent":`...)
	out = append(out, raw...)
	out = append(out, '}')
	return out, nil
}

// ErrorResult is the CallToolResult a caller gets for e: isError, one text
// item holding the JSON error body. Every front door that refuses a call
// before its function runs answers in this shape.
func ErrorResult(e *Error) json.RawMessage { return errorResult(e) }
