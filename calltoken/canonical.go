package calltoken

import "bytes"

// maxCanonicalDepth bounds the fast canonical check's recursion; deeper
// input takes the re-encoding path.
const maxCanonicalDepth = 128

// isCanonical reports whether b is already the canonical form [ArgsDigest]
// would re-encode it to: one JSON value with no whitespace, object keys in
// strictly increasing byte order (no duplicates), strings of printable ASCII
// without escapes and without the characters the encoder escapes (" \ < > &),
// numbers in strict JSON grammar (kept as written). It is conservative: a
// false answer only means the digest re-encodes, so equal inputs keep equal
// digests either way.
func isCanonical(b []byte) bool {
	n, ok := canonValue(b, 0)
	return ok && n == len(b)
}

// canonValue checks the value at the start of b and returns its length.
func canonValue(b []byte, depth int) (int, bool) {
	if len(b) == 0 || depth > maxCanonicalDepth {
		return 0, false
	}
	switch c := b[0]; {
	case c == '{':
		return canonObject(b, depth)
	case c == '[':
		return canonArray(b, depth)
	case c == '"':
		return canonString(b)
	case c == '-' || (c >= '0' && c <= '9'):
		return canonNumber(b)
	case bytes.HasPrefix(b, []byte("true")):
		return 4, true
	case bytes.HasPrefix(b, []byte("false")):
		return 5, true
	case bytes.HasPrefix(b, []byte("null")):
		return 4, true
	}
	return 0, false
}

func canonObject(b []byte, depth int) (int, bool) {
	i := 1
	if i < len(b) && b[i] == '}' {
		return 2, true
	}
	var prev []byte
	for first := true; ; first = false {
		n, ok := canonString(b[i:])
		if !ok {
			return 0, false
		}
		key := b[i+1 : i+n-1]
		if !first && bytes.Compare(prev, key) >= 0 {
			return 0, false
		}
		prev = key
		i += n
		if i >= len(b) || b[i] != ':' {
			return 0, false
		}
		i++
		next, end, ok := canonElement(b, i, depth, '}')
		if !ok || end {
			return next, ok
		}
		i = next
	}
}

func canonArray(b []byte, depth int) (int, bool) {
	i := 1
	if i < len(b) && b[i] == ']' {
		return 2, true
	}
	for {
		next, end, ok := canonElement(b, i, depth, ']')
		if !ok || end {
			return next, ok
		}
		i = next
	}
}

// canonElement checks the value at b[i:] (an object member's value or an
// array element) and what follows it: a comma (next is where the following
// element starts) or closer (end is true and next is the length of the whole
// container).
func canonElement(b []byte, i, depth int, closer byte) (next int, end, ok bool) {
	n, ok := canonValue(b[i:], depth+1)
	if !ok {
		return 0, false, false
	}
	i += n
	if i >= len(b) {
		return 0, false, false
	}
	switch b[i] {
	case ',':
		return i + 1, false, true
	case closer:
		return i + 1, true, true
	}
	return 0, false, false
}

// canonString accepts a string of printable ASCII the encoder writes
// unchanged.
func canonString(b []byte) (int, bool) {
	if len(b) == 0 || b[0] != '"' {
		return 0, false
	}
	for i := 1; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20 || c > 0x7e || c == '\\' || c == '<' || c == '>' || c == '&':
			return 0, false
		}
	}
	return 0, false
}

// canonNumber accepts -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func canonNumber(b []byte) (int, bool) {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == start {
			return 0, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == start {
			return 0, false
		}
	}
	return i, true
}
