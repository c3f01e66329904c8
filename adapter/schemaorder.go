package adapter

import (
	"bytes"
	stdjson "encoding/json"

	"github.com/google/jsonschema-go/jsonschema"
)

// UnmarshalJSON reads a declaration, keeping the order of every schema's
// properties as the JSON gives it: jsonschema-go marshals properties in
// PropertyOrder, which decoding alone leaves empty, and a tool rebuilt from
// its declaration must list exactly as its function lists it (a model reads
// the properties in that order).
func (d *Declaration) UnmarshalJSON(b []byte) error {
	type plain Declaration
	var p plain
	if err := stdjson.Unmarshal(b, &p); err != nil {
		return err
	}
	var raw struct {
		In  stdjson.RawMessage `json:"inputSchema"`
		Out stdjson.RawMessage `json:"outputSchema"`
	}
	if err := stdjson.Unmarshal(b, &raw); err != nil {
		return err
	}
	restorePropertyOrder(raw.In, p.InputSchema)
	restorePropertyOrder(raw.Out, p.OutputSchema)
	*d = Declaration(p)
	return nil
}

// restorePropertyOrder sets s.PropertyOrder, and that of every schema inside
// s, to the order of the properties in raw, the JSON s was decoded from.
func restorePropertyOrder(raw []byte, s *jsonschema.Schema) {
	if s == nil {
		return
	}
	keys, vals := objectMembers(raw)
	if keys == nil {
		return
	}
	if props, ok := vals["properties"]; ok {
		order, pvals := objectMembers(props)
		s.PropertyOrder = order
		for _, name := range order {
			restorePropertyOrder(pvals[name], s.Properties[name])
		}
	}
	one := map[string]*jsonschema.Schema{
		"items": s.Items, "additionalProperties": s.AdditionalProperties, "not": s.Not,
		"if": s.If, "then": s.Then, "else": s.Else, "contains": s.Contains,
	}
	for k, sub := range one {
		restorePropertyOrder(vals[k], sub)
	}
	many := map[string][]*jsonschema.Schema{"anyOf": s.AnyOf, "oneOf": s.OneOf, "allOf": s.AllOf, "prefixItems": s.PrefixItems}
	for k, subs := range many {
		var elems []stdjson.RawMessage
		if stdjson.Unmarshal(vals[k], &elems) != nil || len(elems) != len(subs) {
			continue
		}
		for i, sub := range subs {
			restorePropertyOrder(elems[i], sub)
		}
	}
	for _, k := range []string{"$defs", "definitions"} {
		defs := s.Defs
		if k == "definitions" {
			defs = s.Definitions
		}
		_, dvals := objectMembers(vals[k])
		for name, sub := range defs {
			restorePropertyOrder(dvals[name], sub)
		}
	}
}

// objectMembers returns the keys of the JSON object raw in their order and
// each member's raw value; nil keys when raw is not an object.
func objectMembers(raw []byte) ([]string, map[string]stdjson.RawMessage) {
	dec := stdjson.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != stdjson.Delim('{') {
		return nil, nil
	}
	keys := []string{}
	vals := map[string]stdjson.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil
		}
		k, _ := tok.(string)
		var v stdjson.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil
		}
		keys = append(keys, k)
		vals[k] = v
	}
	return keys, vals
}
