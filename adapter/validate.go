package adapter

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	json "github.com/segmentio/encoding/json"

	"github.com/mcpfn/mcpfn/audit"
)

// Issue is one problem found validating arguments. It names where and which
// rule, never the offending value unless that value is plainly not a secret:
// the answer goes to a model and the issue to the audit row.
type Issue struct {
	Path    string `json:"path,omitempty"`    // JSON pointer into the arguments, where known exactly
	Keyword string `json:"keyword,omitempty"` // the JSON Schema keyword that failed (type, required, …)
	Message string `json:"message"`
	// Value is the offending value, only when it is a short scalar that is
	// neither secret-shaped ([audit.IsSecretValue]) nor under a key naming
	// a secret ([audit.IsSecretKey]).
	Value any `json:"value,omitempty"`
}

// maxIssueMessage caps one issue's text.
const maxIssueMessage = 500

// maxIssueValue caps the length of a string value an issue may show.
const maxIssueValue = 100

// validateArguments is step 3: size, depth and the input schema. It returns
// the arguments to hand the handler (absent arguments become {}).
func (f *Function) validateArguments(args json.RawMessage) (json.RawMessage, error) {
	args = bytes.TrimSpace(args)
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	lim := f.opts.limits
	if limit := f.argumentLimit(); len(args) > limit {
		return nil, Errorf(CodePayloadTooLarge, "the arguments are %d bytes; this tool accepts at most %d", len(args), limit).
			WithHint("send less data per call")
	}
	if depthExceeded(args, lim.MaxDepth) {
		return nil, Errorf(CodeValidation, "the arguments nest deeper than %d levels", lim.MaxDepth)
	}
	if f.tool.inFast.valid(args) {
		// Certainly valid: jsonschema-go would accept these arguments, so
		// they are neither decoded into a map nor walked reflectively.
		return args, nil
	}
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		why := jsonErrorText(err)
		return nil, NewError(CodeValidation, "the arguments are not valid JSON: "+why).WithCause(errors.New(why))
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, NewError(CodeValidation, "the arguments must be a JSON object")
	}
	if err := f.tool.inResolved.Validate(v); err != nil {
		// The schema error quotes the offending value: neither the answer
		// nor the audit's raw error keeps it, only the issue built from it.
		iss := schemaIssue(err, v)
		return nil, NewError(CodeValidation, "the arguments do not match the tool's input schema").
			WithDetails([]Issue{iss}).WithCause(errors.New(iss.String()))
	}
	return args, nil
}

// String is the issue as one line of text.
func (iss Issue) String() string {
	s := iss.Message
	if iss.Path != "" {
		s = iss.Path + ": " + s
	}
	return s
}

// Keyword-specific reading of a jsonschema-go error message ("type: <value>
// has type "string", want "integer""): each keeps the schema's side of the
// message and drops the value's rendering. Compiled on first use (lazyRegexp):
// only a call with invalid arguments needs them.
var (
	reTypeMsg    = lazyRegexp(`^type: .* (has type "[^"]*", want .*)$`)
	reEnumMsg    = lazyRegexp(`^enum: .* does not equal any of: (.*)$`)
	reConstMsg   = lazyRegexp(`^const: .* does not equal (.*)$`)
	reLengthMsg  = lazyRegexp(`^(minLength|maxLength): .* contains (\d+) Unicode code points, (.*)$`)
	rePatternMsg = lazyRegexp(`^pattern: .* does not match regular expression (.*)$`)
	reNumberMsg  = lazyRegexp(`^(minimum|maximum|exclusiveMinimum|exclusiveMaximum|multipleOf): \S+ (is .*)$`)
	reKeyword    = lazyRegexp(`^([a-zA-Z]+)(\[[^\]]*\])?: `)
)

// countOnly are keywords whose messages hold counts, indices and the
// schema's property names, never an argument's value.
var countOnly = map[string]bool{
	"required": true, "minItems": true, "maxItems": true, "minProperties": true, "maxProperties": true,
	"uniqueItems": true, "minContains": true, "maxContains": true, "dependentRequired": true,
}

// schemaIssue turns a jsonschema-go validation error into an issue: the
// instance path (from the innermost schema location), the keyword, a
// message without the value, and the value itself when it is safe to show.
func schemaIssue(err error, args any) Issue {
	msg, schemaPath := err.Error(), ""
	for strings.HasPrefix(msg, "validating ") {
		rest := msg[len("validating "):]
		i := strings.Index(rest, ": ")
		if i < 0 {
			break
		}
		schemaPath, msg = rest[:i], rest[i+2:]
	}
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i] // anyOf and oneOf append every branch's error
	}
	var iss Issue
	switch {
	case strings.HasPrefix(msg, "unexpected additional properties"):
		iss.Keyword, iss.Message = "additionalProperties", "unexpected additional properties"
		if v, ok := args.(map[string]any); ok && schemaPath == "root" {
			iss.Message += " " + safeNames(v, msg)
		}
	default:
		if m := reKeyword().FindStringSubmatch(msg); m != nil {
			iss.Keyword = m[1]
		}
		iss.Message = safeSchemaMessage(iss.Keyword, msg)
	}
	path, exact := instancePath(schemaPath)
	if exact {
		iss.Path = path
		if v, ok := lookup(args, path); ok && showable(path, v) {
			iss.Value = v
		}
	}
	iss.Message = audit.SanitizeText(iss.Message, maxIssueMessage)
	return iss
}

func safeSchemaMessage(keyword, msg string) string {
	switch {
	case countOnly[keyword]:
		return truncateUTF8(msg, maxIssueMessage)
	case keyword == "type":
		if m := reTypeMsg().FindStringSubmatch(msg); m != nil {
			return "type: " + m[1]
		}
	case keyword == "enum":
		if m := reEnumMsg().FindStringSubmatch(msg); m != nil {
			return "enum: not one of " + truncateUTF8(m[1], maxIssueMessage)
		}
	case keyword == "const":
		if m := reConstMsg().FindStringSubmatch(msg); m != nil {
			return "const: does not equal " + truncateUTF8(m[1], maxIssueMessage)
		}
	case keyword == "minLength" || keyword == "maxLength":
		if m := reLengthMsg().FindStringSubmatch(msg); m != nil {
			return m[1] + ": " + m[2] + " characters, " + m[3]
		}
	case keyword == "pattern":
		if m := rePatternMsg().FindStringSubmatch(msg); m != nil {
			return "pattern: does not match regular expression " + truncateUTF8(m[1], maxIssueMessage)
		}
	case reNumberMsg().MatchString(msg):
		m := reNumberMsg().FindStringSubmatch(msg)
		return m[1] + ": " + m[2]
	}
	if keyword == "" {
		return "the value does not match the schema"
	}
	return keyword + ": the value does not match"
}

// safeNames lists the argument names the schema does not know, each
// masked when it is secret-shaped.
func safeNames(args map[string]any, msg string) string {
	var names []string
	for k := range args {
		if strings.Contains(msg, strconv.Quote(k)) {
			if audit.IsSecretValue(k) {
				k = audit.Redacted
			}
			names = append(names, strconv.Quote(truncateUTF8(k, 64)))
		}
	}
	sort.Strings(names)
	return "[" + strings.Join(names, " ") + "]"
}

// instancePath maps a schema location ("/properties/a/properties/b") to the
// arguments' JSON pointer ("/a/b"); exact is false where the location goes
// through items or additionalProperties, whose index or key the error does
// not say.
func instancePath(schemaPath string) (string, bool) {
	if schemaPath == "root" {
		return "", true
	}
	if !strings.HasPrefix(schemaPath, "/") {
		return "", false
	}
	segs := strings.Split(schemaPath[1:], "/")
	var b strings.Builder
	for i := 0; i < len(segs); i += 2 {
		if segs[i] != "properties" || i+1 >= len(segs) {
			return "", false
		}
		b.WriteString("/" + segs[i+1])
	}
	return b.String(), true
}

// lookup finds the value at a JSON pointer of the decoded arguments.
func lookup(v any, pointer string) (any, bool) {
	if pointer == "" {
		return v, true
	}
	for _, seg := range strings.Split(pointer[1:], "/") {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[seg]; !ok {
			return nil, false
		}
	}
	return v, true
}

// showable: a short scalar, not secret-shaped, on a path no segment of
// which names a secret.
func showable(path string, v any) bool {
	for _, seg := range strings.Split(path, "/") {
		if audit.IsSecretKey(seg) {
			return false
		}
	}
	switch v := v.(type) {
	case string:
		return len(v) <= maxIssueValue && !audit.IsSecretValue(v) && audit.SanitizeText(v, maxIssueValue) == v
	case float64, bool, json.Number:
		return true
	}
	return false
}

// jsonErrorText describes a JSON decoding error without quoting the input:
// the decoder's own message carries an excerpt of the bytes it choked on.
func jsonErrorText(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("invalid JSON at byte %d", syn.Offset)
	case errors.As(err, &typ):
		if typ.Field != "" {
			return fmt.Sprintf("field %q cannot hold that JSON value (want %s)", typ.Field, typ.Type)
		}
		return fmt.Sprintf("the JSON value cannot be decoded into %s", typ.Type)
	}
	return "malformed JSON"
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
