package adapter

import (
	"reflect"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// A fastSchema is an input schema that uses only the keywords of an inferred
// schema (type, properties, required, additionalProperties, items, and the
// bounds of fixed-size integers; title, description and the contentEncoding
// of a []byte annotate, and jsonschema-go asserts none of them). It checks
// the arguments' bytes directly, without decoding them into a map. It is a
// shortcut, not a second validator: it answers "valid" only for arguments
// jsonschema-go also accepts, and for anything else — invalid, or outside
// what it reads with certainty — the caller runs jsonschema-go, whose answer
// and error are the result. See docs/decisions/0020-input-schema-fast-path.md.
type fastSchema struct {
	types    uint8 // bit set of fastType; 0 accepts any type
	props    map[string]fastProp
	required uint64 // one bit per required property
	closed   bool   // additionalProperties: false
	extra    *fastSchema
	items    *fastSchema
	min, max *float64 // only with types == integer
}

type fastProp struct {
	schema *fastSchema
	bit    uint64 // its bit in required, 0 when optional
}

const (
	fastObject uint8 = 1 << iota
	fastArray
	fastString
	fastInteger
	fastNumber
	fastBoolean
	fastNull
)

var fastTypeBits = map[string]uint8{
	"object": fastObject, "array": fastArray, "string": fastString, "integer": fastInteger,
	"number": fastNumber, "boolean": fastBoolean, "null": fastNull,
}

// maxFastDepth bounds the schema nesting compileFast follows.
const maxFastDepth = 32

// compileFast returns the fast form of s, or nil when s uses anything else.
func compileFast(s *jsonschema.Schema) *fastSchema {
	fs, ok := compileFastAt(s, 0)
	if !ok {
		return nil
	}
	return fs
}

func compileFastAt(s *jsonschema.Schema, depth int) (*fastSchema, bool) {
	if s == nil || depth > maxFastDepth {
		return nil, false
	}
	rest := *s
	rest.Title, rest.Description, rest.PropertyOrder, rest.ContentEncoding = "", "", nil, ""
	rest.Type, rest.Types = "", nil
	rest.Properties, rest.Required, rest.AdditionalProperties, rest.Items = nil, nil, nil, nil
	rest.Minimum, rest.Maximum = nil, nil
	if !reflect.ValueOf(rest).IsZero() {
		return nil, false
	}
	fs := &fastSchema{min: s.Minimum, max: s.Maximum}
	types := s.Types
	if s.Type != "" {
		if len(s.Types) > 0 {
			return nil, false
		}
		types = []string{s.Type}
	}
	for _, t := range types {
		bit, ok := fastTypeBits[t]
		if !ok {
			return nil, false
		}
		fs.types |= bit
	}
	if (fs.min != nil || fs.max != nil) && fs.types != fastInteger {
		return nil, false
	}
	if len(s.Properties) > 0 {
		fs.props = make(map[string]fastProp, len(s.Properties))
		for name, ps := range s.Properties {
			p, ok := compileFastAt(ps, depth+1)
			if !ok {
				return nil, false
			}
			fs.props[name] = fastProp{schema: p}
		}
	}
	if len(s.Required) > 64 {
		return nil, false
	}
	for i, name := range s.Required {
		p, ok := fs.props[name]
		if !ok {
			p.schema = &fastSchema{} // required but unconstrained
			if fs.props == nil {
				fs.props = map[string]fastProp{}
			}
		}
		p.bit = 1 << i
		fs.props[name] = p
		fs.required |= p.bit
	}
	if ap := s.AdditionalProperties; ap != nil {
		if isFalseSchema(ap) {
			fs.closed = true
		} else {
			var ok bool
			if fs.extra, ok = compileFastAt(ap, depth+1); !ok {
				return nil, false
			}
		}
	}
	if s.Items != nil {
		var ok bool
		if fs.items, ok = compileFastAt(s.Items, depth+1); !ok {
			return nil, false
		}
	}
	return fs, true
}

// isFalseSchema: {"not": {}}, which is how jsonschema-go writes false.
func isFalseSchema(s *jsonschema.Schema) bool {
	if s.Not == nil || !reflect.ValueOf(*s.Not).IsZero() {
		return false
	}
	rest := *s
	rest.Not = nil
	return reflect.ValueOf(rest).IsZero()
}

// valid reports whether args (trimmed, non-empty) certainly satisfy the
// schema and decode into the value jsonschema-go would validate. false
// means "not certain": the caller validates the slow way.
func (fs *fastSchema) valid(args []byte) bool {
	if fs == nil || len(args) == 0 || args[0] != '{' {
		return false
	}
	n, ok := fs.value(args, 0)
	return ok && n == len(args)
}

// value checks the JSON value at the start of b against fs (nil: any) and
// returns its length. It allows no whitespace inside values it cannot
// skip cheaply: whitespace is skipped between tokens.
func (fs *fastSchema) value(b []byte, depth int) (int, bool) {
	if len(b) == 0 || depth > maxFastDepth*2 {
		return 0, false
	}
	var t uint8
	var n int
	var ok bool
	switch c := b[0]; {
	case c == '{':
		t = fastObject
		n, ok = fs.object(b, depth)
	case c == '[':
		t = fastArray
		n, ok = fs.array(b, depth)
	case c == '"':
		t = fastString
		n, ok = scanString(b, false)
	case c == '-' || (c >= '0' && c <= '9'):
		var integer bool
		var iv int64
		n, integer, iv, ok = scanNumber(b)
		if ok && fs != nil && fs.types != 0 {
			switch {
			case integer && fs.types&(fastInteger|fastNumber) != 0:
				if (fs.min != nil && float64(iv) < *fs.min) || (fs.max != nil && float64(iv) > *fs.max) {
					return 0, false
				}
				return n, true
			case !integer && fs.types&fastNumber != 0:
				return n, true
			}
			return 0, false
		}
		return n, ok
	case len(b) >= 4 && string(b[:4]) == "true":
		t, n, ok = fastBoolean, 4, true
	case len(b) >= 5 && string(b[:5]) == "false":
		t, n, ok = fastBoolean, 5, true
	case len(b) >= 4 && string(b[:4]) == "null":
		t, n, ok = fastNull, 4, true
	}
	if !ok || (fs != nil && fs.types != 0 && fs.types&t == 0) {
		return 0, false
	}
	return n, true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

func (fs *fastSchema) object(b []byte, depth int) (int, bool) {
	var seen uint64
	i := skipSpace(b, 1)
	if i < len(b) && b[i] == '}' {
		i++
	} else {
		for {
			n, ok := scanString(b[i:], true)
			if !ok {
				return 0, false
			}
			key := b[i+1 : i+n-1]
			i = skipSpace(b, i+n)
			if i >= len(b) || b[i] != ':' {
				return 0, false
			}
			i = skipSpace(b, i+1)
			var sub *fastSchema
			if fs != nil {
				if p, known := fs.props[string(key)]; known {
					sub = p.schema
					seen |= p.bit
				} else if fs.closed {
					return 0, false
				} else {
					sub = fs.extra
				}
			}
			if n, ok = sub.value(b[i:], depth+1); !ok {
				return 0, false
			}
			i = skipSpace(b, i+n)
			if i >= len(b) {
				return 0, false
			}
			if b[i] == '}' {
				i++
				break
			}
			if b[i] != ',' {
				return 0, false
			}
			i = skipSpace(b, i+1)
		}
	}
	if fs != nil && seen&fs.required != fs.required {
		return 0, false
	}
	return i, true
}

func (fs *fastSchema) array(b []byte, depth int) (int, bool) {
	var items *fastSchema
	if fs != nil {
		items = fs.items
	}
	i := skipSpace(b, 1)
	if i < len(b) && b[i] == ']' {
		return i + 1, true
	}
	for {
		n, ok := items.value(b[i:], depth+1)
		if !ok {
			return 0, false
		}
		i = skipSpace(b, i+n)
		if i >= len(b) {
			return 0, false
		}
		if b[i] == ']' {
			return i + 1, true
		}
		if b[i] != ',' {
			return 0, false
		}
		i = skipSpace(b, i+1)
	}
}

// scanString accepts a JSON string of valid UTF-8 whose escapes are not
// surrogates; a key (noEscapes) must have no escapes at all, so that its
// bytes are its name.
func scanString(b []byte, noEscapes bool) (int, bool) {
	if len(b) == 0 || b[0] != '"' {
		return 0, false
	}
	for i := 1; i < len(b); {
		c := b[i]
		switch {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return 0, false
		case c == '\\':
			if noEscapes || i+1 >= len(b) {
				return 0, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return 0, false
				}
				var r rune
				for _, h := range b[i+2 : i+6] {
					switch {
					case h >= '0' && h <= '9':
						r = r<<4 | rune(h-'0')
					case h >= 'a' && h <= 'f':
						r = r<<4 | rune(h-'a'+10)
					case h >= 'A' && h <= 'F':
						r = r<<4 | rune(h-'A'+10)
					default:
						return 0, false
					}
				}
				if r >= 0xD800 && r <= 0xDFFF {
					return 0, false
				}
				i += 6
			default:
				return 0, false
			}
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size <= 1 {
				return 0, false
			}
			i += size
		}
	}
	return 0, false
}

// scanNumber accepts -?(0|[1-9][0-9]*)(\.[0-9]+)? of at most 15
// significant characters, so that its float64 is finite and, without a
// fraction, an exact integer (iv). Exponents and longer numbers are left
// to the slow path.
func scanNumber(b []byte) (n int, integer bool, iv int64, ok bool) {
	i, neg := 0, false
	if b[0] == '-' {
		i, neg = 1, true
	}
	start := i
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			iv = iv*10 + int64(b[i]-'0')
			i++
			if i-start > 15 {
				return 0, false, 0, false
			}
		}
	default:
		return 0, false, 0, false
	}
	integer = true
	if i < len(b) && b[i] == '.' {
		integer = false
		i++
		fs := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == fs || i-start > 16 {
			return 0, false, 0, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		return 0, false, 0, false
	}
	if neg {
		iv = -iv
	}
	return i, integer, iv, true
}
