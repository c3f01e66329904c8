package viewer

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
)

// readablePreview indents an argument preview that is JSON, keeping its key
// order, and writes strings without the \u003c-style escapes JSON encoders
// put on <, > and &: people read "<script>" where the caller sent it. (The
// page escapes it as HTML like every other value.) A preview that is not
// JSON (a truncated one) is returned as stored.
func readablePreview(s string) string {
	if s == "" || !json.Valid([]byte(s)) {
		return s
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var b bytes.Buffer
	if err := writeValue(&b, dec, 0); err != nil {
		return s
	}
	return b.String()
}

func writeValue(b *bytes.Buffer, dec *json.Decoder, depth int) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		closing, open := "}", string(t)
		if t == '[' {
			closing = "]"
		}
		b.WriteString(open)
		n := 0
		for dec.More() {
			if n > 0 {
				b.WriteByte(',')
			}
			n++
			newline(b, depth+1)
			if t == '{' {
				key, err := dec.Token()
				if err != nil {
					return err
				}
				ks, ok := key.(string)
				if !ok {
					return errors.New("viewer: object key is not a string")
				}
				writeString(b, ks)
				b.WriteString(": ")
			}
			if err := writeValue(b, dec, depth+1); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil && err != io.EOF {
			return err
		}
		if n > 0 {
			newline(b, depth)
		}
		b.WriteString(closing)
	case string:
		writeString(b, t)
	case json.Number:
		b.WriteString(t.String())
	case bool:
		if t {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case nil:
		b.WriteString("null")
	}
	return nil
}

func newline(b *bytes.Buffer, depth int) {
	b.WriteByte('\n')
	b.WriteString(strings.Repeat("  ", depth))
}

func writeString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	b.Truncate(b.Len() - 1) // Encode's newline
}
