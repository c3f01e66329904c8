package audit

import "strings"

// X-Ray and W3C Trace Context name the same trace and span with different
// spellings, and mcpfn keeps one set of ids for both (docs/tracing.md):
//
//	X-Ray trace id   1-5759e988-bd862e3fe1be46a994272793
//	W3C trace id       5759e988bd862e3fe1be46a994272793
//	span id          53995c3f42cd8ad8 (identical in both)
//
// The W3C id is the X-Ray id without its version and dashes; an X-Ray id is
// the W3C id cut after 8 digits. X-Ray reads those 8 digits as the trace's
// start in epoch seconds; a trace a W3C client started has random digits
// there, which X-Ray accepts from OTLP (and, since 2023, in segment
// documents) but which say nothing about time.

// W3CTraceID returns the 32 hex digits of an X-Ray trace id
// ("1-xxxxxxxx-yyyyyyyyyyyyyyyyyyyyyyyy"), or "" when id is not one.
func W3CTraceID(id string) string {
	if len(id) != 35 || id[0] != '1' || id[1] != '-' || id[10] != '-' {
		return ""
	}
	w := id[2:10] + id[11:]
	if !isLowerHex(w) {
		return ""
	}
	return w
}

// XRayTraceID returns the X-Ray form of a W3C trace id (32 lowercase hex
// digits, not all zero), or "" when id is not one.
func XRayTraceID(id string) string {
	if len(id) != 32 || !isLowerHex(id) || id == strings.Repeat("0", 32) {
		return ""
	}
	return "1-" + id[:8] + "-" + id[8:]
}

// Traceparent is a parsed W3C traceparent header
// ("00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>").
type Traceparent struct {
	TraceID  string // W3C form
	ParentID string
	Sampled  bool
}

// ParseTraceparent parses a traceparent value as W3C Trace Context level 1
// says a receiver must: version 00 exactly (a later version is read by its
// first four fields), lowercase hex, no all-zero ids. ok is false for
// anything else, which the caller then ignores: a malformed header starts
// no trace and names no parent.
func ParseTraceparent(v string) (tp Traceparent, ok bool) {
	v = strings.TrimSpace(v)
	if len(v) < 55 || v[2] != '-' || v[35] != '-' || v[52] != '-' {
		return Traceparent{}, false
	}
	version, trace, parent, flags := v[:2], v[3:35], v[36:52], v[53:55]
	switch {
	case !isLowerHex(version) || version == "ff":
		return Traceparent{}, false
	case version == "00" && len(v) != 55:
		return Traceparent{}, false
	case version != "00" && len(v) > 55 && v[55] != '-':
		return Traceparent{}, false
	case !isLowerHex(trace) || trace == strings.Repeat("0", 32):
		return Traceparent{}, false
	case !isLowerHex(parent) || parent == strings.Repeat("0", 16):
		return Traceparent{}, false
	case !isLowerHex(flags):
		return Traceparent{}, false
	}
	f := flags[1]
	return Traceparent{TraceID: trace, ParentID: parent, Sampled: f == '1' || f == '3' || f == '5' || f == '7' || f == '9' || f == 'b' || f == 'd' || f == 'f'}, true
}

// String formats tp as a version-00 traceparent.
func (tp Traceparent) String() string {
	flags := "00"
	if tp.Sampled {
		flags = "01"
	}
	return "00-" + tp.TraceID + "-" + tp.ParentID + "-" + flags
}

// XRayHeader is tp as an X-Ray trace header naming the same trace and
// parent ("Root=1-…;Parent=…;Sampled=1|0").
func (tp Traceparent) XRayHeader() string {
	s := "0"
	if tp.Sampled {
		s = "1"
	}
	return "Root=" + XRayTraceID(tp.TraceID) + ";Parent=" + tp.ParentID + ";Sampled=" + s
}

func isLowerHex(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
