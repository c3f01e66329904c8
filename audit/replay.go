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
	"unicode"
)

// ReplayStats counts what [Replay] did.
type ReplayStats struct {
	Lines   int // lines read
	Found   int // fallback rows found
	Written int // rows put (new, or completing a pending row)
	Present int // rows already in the table: nothing to do
	// Refused counts the final rows whose key holds the row of another
	// execution of the call (a refused row's own fallback line, replayed):
	// that row stays, this one is not written.
	Refused int
	Failed  int // rows that could not be written (see the error)
	// Foreign counts the rows of another writer than the log's: a
	// function's log carries only its own tool's rows, the gateway's log
	// only the gateway's. Such a line is forged (a compromised function
	// printing rows it may not write) or a misfiled log; it is reported
	// in the error and never written.
	Foreign   int
	Malformed int // lines with the marker that did not decode to a row
}

// ErrForeignRow is in the error of a [Replay] that found rows of another
// writer than the log's (see [ReplayStats].Foreign).
var ErrForeignRow = errors.New("a row of another writer than the log's, not written")

// maxForeignReports bounds how many foreign rows the error names one by
// one: a forging function may print any number of them.
const maxForeignReports = 20

const maxLogLine = 4 << 20 // a fallback line is < 256 KB; exports may add wrapping

var markerWord = []byte(FallbackMarker) // also matches the marker inside escaped JSON

// Replay reads log text (a CloudWatch Logs export, `aws logs tail` output, or
// a function's raw stdout) and writes the fallback rows it finds into a's
// table.
//
// writer is whose log r is: the tool whose function printed it (the log
// group /aws/lambda/<function> belongs to the tool that function serves), or
// [GatewayWriter] for the gateway's. It comes from the caller — the
// operator's configuration — never from the log: only rows of that writer
// (the writer a row names, else its tool) are written, under its key
// "<writer>#<callId>", so a replay can write no row the log's own role could
// not write itself (dynamodb:LeadingKeys). A function controls every line of
// its log; a row of any other writer in it is counted Foreign, reported in
// the error (wrapping [ErrForeignRow]) and never written, late outcomes
// included. An empty writer, or one that cannot start a key, is an error
// before anything is read.
//
// A fallback object is accepted only where a fallback line can be: as the
// whole line, as the whole line after a log prefix (a timestamp, then a
// request id and level as Lambda's text format writes them, or a log stream
// name as `aws logs tail` does), or as the whole "message" of a structured
// log line (Lambda's JSON log format, a CloudWatch Logs subscription
// record's logEvents). A fallback-shaped object anywhere else — inside other
// text, in some other field — is refused and counted as malformed: a tool
// that logs what a caller sent must not be able to inject rows. Rows are
// sanitized again before they are written. Writes use the same conditions
// as the Auditor, so replaying the same log twice leaves one row per call,
// and a pending row never overwrites a final one; a final row whose call
// already has another execution's row is counted refused, not written. Rows
// that cannot be written are counted and reported in the error, never
// re-printed as fallback lines.
func Replay(ctx context.Context, r io.Reader, a *Auditor, writer string) (ReplayStats, error) {
	var st ReplayStats
	if err := checkReplayWriter(writer); err != nil {
		return st, err
	}
	var errs []error
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLogLine)
	for sc.Scan() {
		st.Lines++
		line := sc.Bytes()
		if !bytes.Contains(line, markerWord) {
			continue
		}
		rows := parseFallbackLine(line)
		if len(rows) == 0 {
			st.Malformed++
			continue
		}
		for _, row := range rows {
			st.Found++
			if err := ctx.Err(); err != nil {
				return st, err
			}
			if w := row.writerName(); w != writer {
				st.Foreign++
				if st.Foreign <= maxForeignReports {
					errs = append(errs, fmt.Errorf("line %d, call %q: writer %q in the log of %s: %w", st.Lines, row.CallID, w, writer, ErrForeignRow))
				}
				continue
			}
			scrubRow(row, true)
			clampRow(row, a.cfg.EntityDimension)
			var res string
			var err error
			if row.Status == StatusLate {
				if row.FinishedAt == nil {
					err = errors.New("a late outcome without finishedAt")
				} else {
					res, err = a.late(ctx, row)
				}
			} else {
				res, _, err = a.put(ctx, itemFor(row, a.cfg.EntityDimension), row)
			}
			switch {
			case err != nil:
				st.Failed++
				errs = append(errs, fmt.Errorf("line %d, call %q: %w", st.Lines, row.CallID, err))
			case res == putDuplicate:
				st.Present++
			case res == putRefused:
				st.Refused++
			default:
				st.Written++
			}
		}
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, err)
	}
	if n := st.Foreign - maxForeignReports; n > 0 {
		errs = append(errs, fmt.Errorf("%d more rows of other writers in the log of %s: %w", n, writer, ErrForeignRow))
	}
	return st, errors.Join(errs...)
}

// checkReplayWriter refuses a writer no row key can start with.
func checkReplayWriter(writer string) error {
	if writer == "" {
		return errors.New("audit: Replay needs the writer whose log it reads (a tool's name, or " + GatewayWriter + ")")
	}
	if strings.ContainsFunc(writer, func(r rune) bool { return r == '#' || unicode.IsSpace(r) || !unicode.IsPrint(r) }) {
		return fmt.Errorf("audit: Replay: writer %q is no writer's name (no '#', blank or control character)", writer)
	}
	return nil
}

// logPrefix is what may stand before a fallback object on its line: a
// timestamp (RFC 3339, with or without fraction and zone), then either
// Lambda's text format "\t<request id>\t<LEVEL>\t" or blanks and an
// optional log stream name ("2026/11/29/[$LATEST]abc…").
var logPrefix = lazyRegexp(`^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})?(?:\t[0-9A-Za-z-]{1,64}\t[A-Z]{1,8}\t|[ \t]+(?:[^\s{]{1,256}[ \t]+)?)`)

// parseFallbackLine returns the fallback rows one log line carries: one for a
// fallback line (bare or after a log prefix) or a structured log line whose
// "message" is one, one per such log event of a CloudWatch Logs
// subscription record, none for anything else. See [Replay] for what is
// refused and why.
func parseFallbackLine(line []byte) []*Row {
	t := bytes.TrimSpace(line)
	if len(t) == 0 {
		return nil
	}
	if t[0] != '{' {
		p := logPrefix().Find(t)
		if p == nil {
			return nil
		}
		t = t[len(p):]
	}
	if row := decodeFallback(t); row != nil {
		return []*Row{row}
	}
	// A structured log line: the fallback line is its whole message.
	var wrapper struct {
		Message   json.RawMessage `json:"message"`
		LogEvents []struct {
			Message json.RawMessage `json:"message"`
		} `json:"logEvents"`
	}
	if json.Unmarshal(t, &wrapper) != nil {
		return nil
	}
	if row := fallbackMessage(wrapper.Message); row != nil {
		return []*Row{row}
	}
	var rows []*Row
	for _, ev := range wrapper.LogEvents {
		if row := fallbackMessage(ev.Message); row != nil {
			rows = append(rows, row)
		}
	}
	return rows
}

// fallbackMessage decodes a structured line's message: a JSON string whose
// whole text is a fallback line, or the fallback object itself.
func fallbackMessage(msg json.RawMessage) *Row {
	if len(msg) == 0 {
		return nil
	}
	if msg[0] == '"' {
		var s string
		if json.Unmarshal(msg, &s) != nil {
			return nil
		}
		return decodeFallback(bytes.TrimSpace([]byte(s)))
	}
	return decodeFallback(msg)
}

// decodeFallback decodes b as one whole fallback object (nothing but
// blanks may follow it), or returns nil.
func decodeFallback(b []byte) *Row {
	if len(b) == 0 || b[0] != '{' {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	var fl struct {
		Marker *int `json:"mcpfnAuditFallback"`
		Row    *Row `json:"row"`
	}
	if err := dec.Decode(&fl); err != nil || fl.Marker == nil || fl.Row == nil || fl.Row.CallID == "" {
		return nil
	}
	if len(bytes.TrimSpace(b[dec.InputOffset():])) != 0 {
		return nil
	}
	if fl.Row.Status == "" {
		fl.Row.Status = StatusDone
	}
	return fl.Row
}
