package adapter

import (
	"reflect"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// inferSchema is jsonschema-go's schema of t, made portable: a type union
// such as {"type": ["null", "array"]} — how jsonschema-go writes Go's nil
// into a schema — is legal JSON Schema, but the OpenAPI subset of Gemini's
// function declarations, AgentCore's schema and the MCP Inspector's --strict
// check want one type per schema. So null stays in a schema only where
// encoding/json writes null (docs/decisions/0028-portable-schemas.md):
//
//   - a slice is an array and a map an object: the adapter writes a nil one
//     of a typed output as [] or {} (nilempty.go);
//   - a []byte, which encoding/json writes in base64, is a string with
//     contentEncoding base64; a nil one is written "";
//   - a pointer in a field with omitempty or omitzero is its element's type:
//     a nil one is left out, never null;
//   - any other pointer — a field without omitempty, a slice element, a map
//     value, the inner one of a pointer to a pointer — is written null when
//     nil, so its schema still says so; and a type that marshals itself is
//     left as inferred (its output is validated: decision 0002).
//
// A client that sends null for an array, object or optional pointer then
// fails validation: absence is how it says "none".
func inferSchema(t reflect.Type) (*jsonschema.Schema, error) {
	s, err := jsonschema.ForType(t, &jsonschema.ForOptions{})
	if err != nil {
		return nil, err
	}
	makePortable(t, s, false)
	return s, nil
}

// makePortable rewrites s, jsonschema-go's schema of t, in place; omitted:
// t is a struct field that encoding/json leaves out when nil (omitempty or
// omitzero).
func makePortable(t reflect.Type, s *jsonschema.Schema, omitted bool) {
	if s == nil {
		return
	}
	pointers := 0
	for ; t.Kind() == reflect.Pointer; t = t.Elem() {
		pointers++
	}
	// Null is written for a nil pointer unless the field is left out, and
	// for the inner one of **T whatever the field says.
	keepNull := pointers > 1 || pointers == 1 && !omitted
	if marshalsSelf(t) {
		// Its own null, if any, is its own; a left-out pointer's is not.
		if pointers == 1 && omitted {
			dropNull(s)
		}
		return
	}
	switch t.Kind() {
	case reflect.Slice:
		if writesBase64(t) {
			s.Type, s.Types, s.Items = "string", nil, nil
			s.ContentEncoding = "base64"
			if keepNull {
				s.Type, s.Types = "", []string{"null", "string"}
			}
			return
		}
		makePortable(t.Elem(), s.Items, false)
	case reflect.Array:
		makePortable(t.Elem(), s.Items, false)
	case reflect.Map:
		makePortable(t.Elem(), s.AdditionalProperties, false)
	case reflect.Struct:
		for name, f := range schemaFields(t) {
			makePortable(f.typ, s.Properties[name], f.omitted)
		}
	}
	if !keepNull {
		dropNull(s)
	}
}

// dropNull takes null out of s's types.
func dropNull(s *jsonschema.Schema) {
	if !slices.Contains(s.Types, "null") {
		return
	}
	types := slices.DeleteFunc(slices.Clone(s.Types), func(t string) bool { return t == "null" })
	if len(types) == 1 {
		s.Type, s.Types = types[0], nil
	} else {
		s.Types = types
	}
}

// marshalsSelf: encoding/json hands t (or *t) to its own MarshalJSON or
// MarshalText, whose output the kind of t does not predict.
func marshalsSelf(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Implements(jsonMarshaler) || t.Implements(textMarshaler) || p.Implements(jsonMarshaler) || p.Implements(textMarshaler)
}

// writesBase64 is encoding/json's rule for a slice it writes as a base64
// string: bytes whose type does not marshal itself.
func writesBase64(t reflect.Type) bool {
	return t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 && !marshalsSelf(t.Elem())
}

// schemaField is a struct field as jsonschema-go names it in a schema.
type schemaField struct {
	typ     reflect.Type
	omitted bool // omitempty or omitzero: left out when nil
}

// schemaFields are t's fields by property name, found as jsonschema-go finds
// them when it infers t (exported, visible, not embedded, json tag name; a
// later field of the same name wins), so each meets its own schema.
func schemaFields(t reflect.Type) map[string]schemaField {
	fields := map[string]schemaField{}
	for _, f := range reflect.VisibleFields(t) {
		if f.Anonymous || !f.IsExported() {
			continue
		}
		name, opts := f.Name, ""
		if tag, ok := f.Tag.Lookup("json"); ok {
			n, rest, found := strings.Cut(tag, ",")
			if n == "-" && !found {
				continue
			}
			if n != "" {
				name = n
			}
			opts = rest
		}
		omitted := slices.ContainsFunc(strings.Split(opts, ","), func(o string) bool { return o == "omitempty" || o == "omitzero" })
		fields[name] = schemaField{typ: f.Type, omitted: omitted}
	}
	return fields
}
