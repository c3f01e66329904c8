package adapter

import (
	"bytes"
	"encoding/json"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
)

// emptyNils writes a tool's typed output as its output schema says: where
// the schema has an array, an object or a base64 string for a slice, a map or
// a []byte of Out, a nil one — which encoding/json writes as null — is
// written [], {} or "" (portable.go says why the schema has no null there).
//
// It rewrites encoding/json's bytes rather than the value: the value may be
// shared with the handler's own state, and a copy would cost what the
// marshal costs. An output with no null in it, the usual case, costs one
// bytes.Contains.
type emptyNils struct {
	out  reflect.Type // Out: the rule is its types', not a hook's other value's
	plan *nilPlan
}

// nilPlan is one position of Out's JSON: what a null there becomes, and
// the positions inside it that can hold one.
type nilPlan struct {
	empty  string     // "[]", "{}" or `""`; "" leaves a null as it is
	fields []nilField // a struct's members that can hold one
	elems  *nilPlan   // an array's elements or a map's values
}

// nilField is a struct member of a nilPlan. A struct has few: a list beats
// a map's hashing.
type nilField struct {
	key  string // as encoding/json writes the name: quoted, HTML escaped
	plan *nilPlan
}

// newEmptyNils plans Out's output under its schema s; nil when no null of
// Out can be written where s has a single type.
func newEmptyNils(out reflect.Type, s *jsonschema.Schema) *emptyNils {
	p := planNils(out, s)
	if p == nil {
		return nil
	}
	return &emptyNils{out: out, plan: p}
}

func planNils(t reflect.Type, s *jsonschema.Schema) *nilPlan {
	if s == nil {
		return nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if marshalsSelf(t) {
		return nil
	}
	p := &nilPlan{}
	switch t.Kind() {
	case reflect.Slice:
		if writesBase64(t) {
			if s.Type == "string" {
				p.empty = `""`
			}
			break
		}
		if s.Type == "array" {
			p.empty = "[]"
		}
		p.elems = planNils(t.Elem(), s.Items)
	case reflect.Array:
		p.elems = planNils(t.Elem(), s.Items)
	case reflect.Map:
		if s.Type == "object" {
			p.empty = "{}"
		}
		p.elems = planNils(t.Elem(), s.AdditionalProperties)
	case reflect.Struct:
		for name, f := range schemaFields(t) {
			fp := planNils(f.typ, s.Properties[name])
			if fp == nil {
				continue
			}
			key, _ := json.Marshal(name)
			p.fields = append(p.fields, nilField{string(key), fp})
		}
	}
	if p.empty == "" && p.elems == nil && p.fields == nil {
		return nil
	}
	return p
}

var nullJSON = []byte("null")

// apply returns raw, encoding/json's output for output, with the planned
// nulls written empty.
func (e *emptyNils) apply(output any, raw []byte) []byte {
	if e == nil || !bytes.Contains(raw, nullJSON) || reflect.TypeOf(output) != e.out {
		return raw
	}
	w := nilWriter{raw: raw}
	w.value(e.plan, 0)
	if w.out == nil {
		return raw
	}
	return append(w.out, raw[w.copied:]...)
}

// nilWriter walks encoding/json's output — valid, compact JSON — and
// copies it into out only once a null is to be rewritten.
type nilWriter struct {
	raw, out []byte
	copied   int // raw[:copied] is in out
}

// value reads the value at raw[i] under p (nil: nothing to rewrite in it)
// and returns the index after it.
func (w *nilWriter) value(p *nilPlan, i int) int {
	raw := w.raw
	switch raw[i] {
	case 'n':
		if p != nil && p.empty != "" {
			if w.out == nil {
				w.out = make([]byte, 0, len(raw)) // every rewrite shortens
			}
			w.out = append(append(w.out, raw[w.copied:i]...), p.empty...)
			w.copied = i + len(nullJSON)
		}
		return i + len(nullJSON)
	case '"':
		return skipString(raw, i)
	case '[':
		var elem *nilPlan
		if p != nil {
			elem = p.elems
		}
		if i++; raw[i] == ']' {
			return i + 1
		}
		for {
			i = w.value(elem, i)
			if raw[i] == ']' {
				return i + 1
			}
			i++ // ','
		}
	case '{':
		if i++; raw[i] == '}' {
			return i + 1
		}
		for {
			k := i
			i = skipString(raw, i)
			var member *nilPlan
			if p != nil {
				member = p.member(raw[k:i])
			}
			i = w.value(member, i+1) // past ':'
			if raw[i] == '}' {
				return i + 1
			}
			i++ // ','
		}
	default: // a number, true or false
		for i < len(raw) && raw[i] != ',' && raw[i] != ']' && raw[i] != '}' {
			i++
		}
		return i
	}
}

// member is the plan of an object's member whose key is key.
func (p *nilPlan) member(key []byte) *nilPlan {
	if p.fields == nil {
		return p.elems // a map's
	}
	for _, f := range p.fields {
		if f.key == string(key) {
			return f.plan
		}
	}
	return nil
}

// skipString returns the index after the JSON string that starts at raw[i].
func skipString(raw []byte, i int) int {
	for i++; ; i++ {
		i += bytes.IndexByte(raw[i:], '"')
		// The quote ends the string unless an odd number of backslashes
		// escape it (the opening quote stops the count).
		n := 0
		for raw[i-1-n] == '\\' {
			n++
		}
		if n%2 == 0 {
			return i + 1
		}
	}
}
