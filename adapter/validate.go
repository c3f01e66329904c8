package adapter

import (
	"bytes"
	"strings"

	json "github.com/segmentio/encoding/json"
)

// Issue is one problem found validating arguments.
type Issue struct {
	Path    string `json:"path,omitempty"` // JSON pointer into the arguments, where known
	Message string `json:"message"`
}

// maxIssueMessage caps one issue's text: a schema error can quote the value.
const maxIssueMessage = 500

// validateArguments is step 3: size, depth and the input schema. It returns
// the arguments to hand the handler (absent arguments become {}).
func (f *Function) validateArguments(args json.RawMessage) (json.RawMessage, error) {
	args = bytes.TrimSpace(args)
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	lim := f.opts.limits
	if len(args) > lim.MaxArgumentBytes {
		return nil, Errorf(CodePayloadTooLarge, "the arguments are %d bytes; this tool accepts at most %d", len(args), lim.MaxArgumentBytes).
			WithHint("send less data per call")
	}
	if depthExceeded(args, lim.MaxDepth) {
		return nil, Errorf(CodeValidation, "the arguments nest deeper than %d levels", lim.MaxDepth)
	}
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return nil, NewError(CodeValidation, "the arguments are not valid JSON").WithCause(err)
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, NewError(CodeValidation, "the arguments must be a JSON object")
	}
	if err := f.tool.inResolved.Validate(v); err != nil {
		return nil, NewError(CodeValidation, "the arguments do not match the tool's input schema").
			WithDetails(issuesOf(err, lim.MaxIssues)).WithCause(err)
	}
	return args, nil
}

// issuesOf splits a schema error into issues, capped at max.
func issuesOf(err error, max int) []Issue {
	var out []Issue
	for line := range strings.SplitSeq(err.Error(), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if len(out) == max {
			out = append(out, Issue{Message: "more issues omitted"})
			break
		}
		if len(line) > maxIssueMessage {
			line = truncateUTF8(line, maxIssueMessage) + "…"
		}
		out = append(out, Issue{Message: line})
	}
	return out
}

// truncateUTF8 cuts s to at most n bytes without splitting a rune.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && (s[n]&0xC0) == 0x80 {
		n--
	}
	return s[:n]
}
