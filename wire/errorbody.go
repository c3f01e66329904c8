package wire

import "encoding/json"

// ErrorBody is the JSON a model reads in an isError tool result:
// {error, message, retryable, details?, hint?}. The adapter writes it for
// failures inside a function and the gateway for failures in front of one,
// so a model sees one shape wherever the call failed.
type ErrorBody struct {
	Error     string `json:"error"` // the error code, e.g. "TIMEOUT"
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
	Details   any    `json:"details,omitempty"`
	Hint      string `json:"hint,omitempty"`
}

// Text is the body as the text of the result's one content item. Details
// that cannot be marshalled are dropped, not fatal: the code and message
// still reach the caller.
func (b ErrorBody) Text() string {
	out, err := json.Marshal(b)
	if err != nil {
		b.Details = nil
		out, _ = json.Marshal(b)
	}
	return string(out)
}

// ErrorResult is the MCP CallToolResult of a failed call: isError, one text
// item holding b's JSON.
func ErrorResult(b ErrorBody) json.RawMessage {
	type textContent struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	out, _ := json.Marshal(struct {
		Content []textContent `json:"content"`
		IsError bool          `json:"isError"`
	}{Content: []textContent{{Type: "text", Text: b.Text()}}, IsError: true})
	return out
}
