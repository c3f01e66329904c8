package audit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// ReplayStats counts what [Replay] did.
type ReplayStats struct {
	Lines     int // lines read
	Found     int // fallback rows found
	Written   int // rows put (new, or completing a pending row)
	Present   int // rows already in the table: nothing to do
	Failed    int // rows that could not be written (see the error)
	Malformed int // lines with the marker that did not decode to a row
}

const maxLogLine = 4 << 20 // a fallback line is < 256 KB; exports may add wrapping

var marker = []byte(`"` + FallbackMarker + `"`)
var markerWord = []byte(FallbackMarker) // also matches the marker inside escaped JSON

// Replay reads log text (a CloudWatch Logs export, `aws logs tail` output, or
// a function's raw stdout) and writes every fallback row it finds into a's
// table. Lines may carry any prefix (timestamps, request ids) and the line
// may itself be JSON-wrapped (Lambda's JSON log format, subscription
// exports): the row is found wherever the marker object is. Writes use the
// same conditions as the Auditor, so replaying the same log twice leaves one
// row per call, and a pending row never overwrites a final one. Rows that
// cannot be written are counted and reported in the error, never re-printed
// as fallback lines.
func Replay(ctx context.Context, r io.Reader, a *Auditor) (ReplayStats, error) {
	var st ReplayStats
	var errs []error
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLogLine)
	for sc.Scan() {
		st.Lines++
		line := sc.Bytes()
		if !bytes.Contains(line, markerWord) {
			continue
		}
		rows := findFallbackRows(line, 0)
		if len(rows) == 0 {
			st.Malformed++
			continue
		}
		for _, row := range rows {
			st.Found++
			if err := ctx.Err(); err != nil {
				return st, err
			}
			scrubRow(row, true)
			clampRow(row, a.cfg.EntityDimension)
			item, err := itemFor(row, a.cfg.EntityDimension)
			var res string
			if err == nil {
				res, err = a.put(ctx, item, row.Status == StatusPending)
			}
			switch {
			case err != nil:
				st.Failed++
				errs = append(errs, fmt.Errorf("line %d, call %s: %w", st.Lines, row.CallID, err))
			case res == putDuplicate:
				st.Present++
			default:
				st.Written++
			}
		}
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, err)
	}
	return st, errors.Join(errs...)
}

// findFallbackRows extracts the fallback rows in one log line. A marker in
// plain JSON is decoded from the '{' that opens its object; a marker inside
// a JSON string (the line is a wrapper) is found by decoding the wrapper and
// searching its strings.
func findFallbackRows(line []byte, depth int) []*Row {
	if depth > 3 {
		return nil
	}
	var rows []*Row
	rest := line
	for {
		i := bytes.Index(rest, marker)
		if i < 0 {
			break
		}
		// The object holding the marker starts at one of the '{' before it;
		// try the nearest first (the marker is the line's first key).
		// Bounded, so a hostile line full of braces costs little.
		found := false
		tries := 0
		for j := bytes.LastIndexByte(rest[:i], '{'); j >= 0 && tries < 16; j = bytes.LastIndexByte(rest[:j], '{') {
			tries++
			if row, n := decodeFallback(rest[j:]); row != nil {
				rows = append(rows, row)
				rest = rest[j+n:]
				found = true
				break
			}
		}
		if !found {
			rest = rest[i+len(marker):]
		}
	}
	if len(rows) > 0 {
		return rows
	}
	start := bytes.IndexByte(line, '{')
	if start < 0 {
		return nil
	}
	var wrapper any
	dec := json.NewDecoder(bytes.NewReader(line[start:]))
	if dec.Decode(&wrapper) != nil {
		return nil
	}
	for _, s := range stringsIn(wrapper) {
		if strings.Contains(s, FallbackMarker) {
			rows = append(rows, findFallbackRows([]byte(s), depth+1)...)
		}
	}
	return rows
}

// decodeFallback decodes the JSON object at the start of b as a fallback
// line, returning the row and the bytes consumed, or nil.
func decodeFallback(b []byte) (*Row, int) {
	dec := json.NewDecoder(bytes.NewReader(b))
	var fl struct {
		Marker *int `json:"mcpfnAuditFallback"`
		Row    *Row `json:"row"`
	}
	if err := dec.Decode(&fl); err != nil || fl.Marker == nil || fl.Row == nil || fl.Row.CallID == "" {
		return nil, 0
	}
	if fl.Row.Status == "" {
		fl.Row.Status = StatusDone
	}
	return fl.Row, int(dec.InputOffset())
}

func stringsIn(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case map[string]any:
		var out []string
		for _, e := range v {
			out = append(out, stringsIn(e)...)
		}
		return out
	case []any:
		var out []string
		for _, e := range v {
			out = append(out, stringsIn(e)...)
		}
		return out
	}
	return nil
}
