package adapter

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/mcpfn/mcpfn/wire"
)

// textContent is a text content block of a CallToolResult. The adapter
// writes its results itself rather than through go-sdk's types, so the wire
// shape is explicit and a call does not pay for the SDK's content machinery.
type textContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// errorResult is the isError result a model reads: a small JSON body
// {error, message, retryable, details?, hint?}.
func errorResult(e *Error) json.RawMessage { return wire.ErrorResult(e.Body()) }

// successResult is step 7: the output must match the output schema, or the
// tool broke its own contract — INTERNAL_SERVER_ERROR, never the caller's
// validation error.
//
// validate is false only for the handler's own typed output under an
// inferred schema with no self-marshalling types (see Tool.outputTrusted):
// such a value matches its schema by construction.
func (f *Function) successResult(output any, validate bool) (json.RawMessage, error) {
	raw, err := json.Marshal(output)
	if err != nil {
		return nil, NewError(CodeInternal, "Internal server error").WithCause(fmt.Errorf("output cannot be marshalled: %w", err))
	}
	raw = f.tool.outNils.apply(output, raw)
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
	out := make([]byte, 0, 2*len(raw)+len(raw)/4+64)
	out = append(out, `{"content":[{"type":"text","text":`...)
	out = appendJSONString(out, raw)
	out = append(out, `}],"structuredContent":`...)
	out = append(out, raw...)
	out = append(out, '}')
	return out, nil
}

// appendJSONString appends s as a JSON string as encoding/json marshals a
// Go string (HTML characters, U+2028 and U+2029 as \u escapes, each byte of
// invalid UTF-8 as U+FFFD, written \ufffd as Go 1.26's encoding/json does),
// without the string conversion and the buffer a json.Marshal costs.
// TestAppendJSONStringIsEncodingJSON holds it to that.
func appendJSONString(b, s []byte) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
