package agentcore

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"
)

// FuzzAmbiguity: a body the interceptor accepts is read alike by every
// parser: no key of it is lost when a parser keeps only one value per key
// (the keys in the token stream are the keys of the decoded objects), and
// ambiguity never panics.
func FuzzAmbiguity(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t___x","arguments":{"id":"B1"}}}`,
		`{"method":"tools/call","method":"tools/list"}`,
		`{"\u006dethod":"a","method":"b"}`,
		`{"Method":"a","method":"b"}`,
		`{"params":{"Name":"a","name":"b"}}`,
		`{"a":[{"b":1,"b":2}]}`,
		`[{"a":1},{"a":1}]`,
		`{"a":"\ud800","a":"\udbff"}`,
		`{} {}`,
		"{\"a\":\"\xff\"}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		why, err := ambiguity(body)
		if err != nil || why != "" {
			return
		}
		var v any
		if json.Unmarshal(body, &v) != nil {
			t.Fatalf("accepted a body encoding/json cannot decode: %q", body)
		}
		if got, want := decodedKeys(v), streamKeys(t, body); got != want {
			t.Fatalf("accepted %q: %d keys in the text, %d after decoding", body, want, got)
		}
	})
}

func decodedKeys(v any) int {
	n := 0
	switch v := v.(type) {
	case map[string]any:
		n += len(v)
		for _, e := range v {
			n += decodedKeys(e)
		}
	case []any:
		for _, e := range v {
			n += decodedKeys(e)
		}
	}
	return n
}

// streamKeys counts the object keys in body's text.
func streamKeys(t *testing.T, body []byte) int {
	dec := json.NewDecoder(bytes.NewReader(body))
	var (
		n      int
		stack  []bool // object?
		wanted []bool // expecting a key?
	)
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return n
		}
		if err != nil {
			t.Fatal(err)
		}
		top := len(stack) - 1
		switch tok := tok.(type) {
		case json.Delim:
			if tok == '{' || tok == '[' {
				stack, wanted = append(stack, tok == '{'), append(wanted, tok == '{')
				continue
			}
			stack, wanted = stack[:top], wanted[:top]
			if top > 0 && stack[top-1] {
				wanted[top-1] = true
			}
			continue
		case string:
			if top >= 0 && stack[top] && wanted[top] {
				n++
				wanted[top] = false
				continue
			}
		}
		if top >= 0 && stack[top] {
			wanted[top] = true
		}
	}
}
