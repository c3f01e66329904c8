package agentcore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/mcpfn/mcpfn/wire"
)

// The interceptor decides on a request (sign it, refuse it, or let it pass)
// from its own reading of the body; AgentCore Gateway then reads the body it
// forwards with its own parser. Where two parsers can read one body
// differently, a call could pass as something the interceptor did not
// check: a body with "method" twice is tools/list to a parser that keeps the
// last key and tools/call to one that keeps the first. So the interceptor
// refuses every body whose reading is not the same for any parser that
// follows RFC 8259:
//   - not UTF-8;
//   - a key repeated in any object, at any depth (after unescaping: "\u006d"
//     is "m"): the decision reads the message, its params and the
//     arguments, and the token's digest covers everything below them;
//   - in the message and its params (where the method, the tool and the
//     arguments are chosen), keys that differ only in case, for parsers that
//     match names case-insensitively.

// maxBodyDepth is the deepest nesting the interceptor reads, as
// encoding/json's own limit.
const maxBodyDepth = 10000

// errUnreadable is a body that is not one JSON value.
var errUnreadable = errors.New("not JSON")

// ambiguity returns why parsers could disagree about body ("" when they
// cannot), or errUnreadable.
func ambiguity(body []byte) (string, error) {
	if !utf8.Valid(body) {
		return "the body is not valid UTF-8", nil
	}
	type frame struct {
		object  bool
		path    string
		keys    map[string]bool
		folded  []string // keys compared case-insensitively (message, params)
		wantKey bool
		key     string
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var stack []*frame
	// valueDone is called when a value inside the top frame is complete.
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].wantKey = true
		}
	}
	values := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", errUnreadable
		}
		var top *frame
		if n := len(stack); n > 0 {
			top = stack[n-1]
		}
		if top == nil {
			if values++; values > 1 {
				return "", errUnreadable
			}
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if len(stack) >= maxBodyDepth {
					return fmt.Sprintf("the body nests deeper than %d levels", maxBodyDepth), nil
				}
				f := &frame{object: t == '{', path: "$", wantKey: t == '{'}
				if top != nil {
					f.path = top.path
					if top.object {
						f.path += "." + top.key
					} else {
						f.path += "[]"
					}
				}
				if f.object {
					f.keys = map[string]bool{}
					// The message itself, and the params object directly
					// in it.
					if top == nil || (len(stack) == 1 && top.object && top.key == "params") {
						f.folded = []string{}
					}
				}
				stack = append(stack, f)
			default:
				stack = stack[:len(stack)-1]
				valueDone()
			}
		case string:
			if top != nil && top.object && top.wantKey {
				if top.keys[t] {
					return fmt.Sprintf("the key %q appears twice in %s", t, top.path), nil
				}
				if top.folded != nil {
					for _, k := range top.folded {
						if strings.EqualFold(k, t) {
							return fmt.Sprintf("the keys %q and %q in %s differ only in case", k, t, top.path), nil
						}
					}
					top.folded = append(top.folded, t)
				}
				top.keys[t] = true
				top.key, top.wantKey = t, false
				continue
			}
			valueDone()
		default:
			valueDone()
		}
	}
	if values != 1 || len(stack) != 0 {
		return "", errUnreadable
	}
	return "", nil
}

// methodName checks what a request that is not tools/call may be called:
// printable ASCII without spaces, and not tools/call in another case (a
// parser or router that folds case would take it for one). It returns the
// JSON-RPC code and why the method is refused, or 0.
func methodName(method string) (int, string) {
	if method == "" {
		return wire.RPCInvalidRequest, "a JSON-RPC request needs a method (a string)"
	}
	for i := 0; i < len(method); i++ {
		if c := method[i]; c <= ' ' || c > '~' {
			return wire.RPCInvalidRequest, "a method name is printable ASCII without spaces"
		}
	}
	if strings.EqualFold(method, "tools/call") {
		return wire.RPCMethodNotFound, "method names are case-sensitive: tools/call"
	}
	return 0, ""
}
