package viewer

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mcpfn/mcpfn/audit"
)

// Listing bounds.
const (
	defaultSince = 24 * time.Hour
	defaultLimit = 200
	maxLimit     = 5000
)

// filters are the calls page's query parameters.
type filters struct {
	Tool    string // exact tool name
	Caller  string // a caller key (<authMethod>#<issuer>#<tenant>#<subject>) or a bare subject
	Entity  string // "value" of the entity dimension, or "dimension=value"
	Outcome string // "ok", "error", or an error code
	Since   string // a duration back from now ("1h") or an RFC 3339 time
	Until   string // RFC 3339 time
	Limit   int

	since, until         time.Time
	entityDim, entityVal string
	callerDone           bool // the query applied the caller filter
	entityDone           bool // the query applied the entity filter
}

func parseFilters(q url.Values, now time.Time) (filters, string) {
	f := filters{
		Tool:    strings.TrimSpace(q.Get("tool")),
		Caller:  strings.TrimSpace(q.Get("caller")),
		Entity:  strings.TrimSpace(q.Get("entity")),
		Outcome: strings.TrimSpace(q.Get("outcome")),
		Since:   strings.TrimSpace(q.Get("since")),
		Until:   strings.TrimSpace(q.Get("until")),
		Limit:   defaultLimit,
	}
	var problem string
	if f.Since == "" {
		f.since = now.Add(-defaultSince)
	} else if d, err := time.ParseDuration(f.Since); err == nil && d > 0 {
		f.since = now.Add(-d)
	} else if t, err := time.Parse(time.RFC3339, f.Since); err == nil {
		f.since = t
	} else {
		problem = "since: want a duration such as 1h or an RFC 3339 time"
		f.since = now.Add(-defaultSince)
	}
	if f.Until != "" {
		if t, err := time.Parse(time.RFC3339, f.Until); err == nil {
			f.until = t
		} else {
			problem = "until: want an RFC 3339 time"
		}
	}
	if s := q.Get("limit"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			f.Limit = min(n, maxLimit)
		} else {
			problem = "limit: want a positive number"
		}
	}
	return f, problem
}

// keep reports whether a row passes the filters the query did not apply.
func (f *filters) keep(r *audit.Row) bool {
	if f.Tool != "" && r.Tool != f.Tool {
		return false
	}
	if f.Caller != "" && !f.callerDone && r.CallerSubject != f.Caller {
		return false
	}
	if f.Entity != "" && !f.entityDone && r.Dimensions[f.entityDim] != f.entityVal {
		return false
	}
	switch f.Outcome {
	case "":
	case "ok":
		if !r.OK || r.Status == audit.StatusPending {
			return false
		}
	case "error":
		if r.OK {
			return false
		}
	case "pending":
		if r.Status != audit.StatusPending {
			return false
		}
	default:
		if r.ErrorCode != f.Outcome {
			return false
		}
	}
	return true
}

// callLine is one call of the listing: its outcome row, and the call's
// other row when the gateway wrote one.
type callLine struct {
	audit.Row
	Call audit.Call
	// Other is the row that is not the outcome (nil: the call has one).
	Other *audit.Row
}

type callsPage struct {
	F         filters
	Problem   string
	Rows      []callLine // one per call
	Matched   int        // calls that passed the filters (before the limit)
	Truncated bool       // the scan stopped early or the limit cut calls
	Stats     []toolStats
	Source    string // how the rows were found: "scan", "byCaller", "byEntity"
	Entity    string // the entity dimension
}

// calls is the listing: newest first, filtered, with per-tool statistics
// over every matching row (not only the shown ones).
func (v *Viewer) calls(w http.ResponseWriter, r *http.Request) {
	f, problem := parseFilters(r.URL.Query(), v.cfg.Now())
	a := v.cfg.Auditor
	// An index query is bounded like the Scan: a busy caller's month must
	// not be read whole for one page.
	opts := audit.QueryOptions{Since: f.since, Until: f.until, Newest: true, Limit: audit.MaxScanned}
	p := callsPage{F: f, Problem: problem, Entity: a.EntityDimension()}
	var rows []audit.Row
	var err error
	dim, val := a.EntityDimension(), f.Entity
	if d, v, ok := strings.Cut(f.Entity, "="); ok {
		dim, val = d, v
	}
	f.entityDim, f.entityVal = dim, val
	switch {
	case strings.Contains(f.Caller, "#"):
		p.Source = "byCaller"
		f.callerDone = true
		rows, err = a.CallerKeyRows(r.Context(), f.Caller, opts)
	case f.Entity != "":
		p.Source = "byEntity"
		f.entityDone = true
		rows, err = a.EntityRows(r.Context(), dim, val, opts)
	default:
		// A bare subject has no index of its own (the key names the
		// issuer too): it is a filter over the scan.
		p.Source = "scan"
		rows, p.Truncated, err = a.RecentRows(r.Context(), opts)
	}
	if err != nil {
		v.fail(w, "reading the audit table", err)
		return
	}
	if len(rows) >= audit.MaxScanned {
		p.Truncated = true
	}
	// One line per call: the rows of a call id joined, filtered and
	// counted by the call's outcome row (a call the gateway gave up on
	// and the function finished is the function's, once).
	var kept []audit.Call
	var outcomes []audit.Row
	for _, c := range audit.JoinCalls(rows) {
		if o := c.Outcome(); f.keep(o) {
			kept = append(kept, c)
			outcomes = append(outcomes, *o)
		}
	}
	p.Matched = len(kept)
	p.Stats = statsOf(outcomes)
	if len(kept) > f.Limit {
		kept, p.Truncated = kept[:f.Limit], true
	}
	// The shown calls' rows a listing lacks (an entity's holds only the
	// functions' rows), read by key.
	if err := a.CompleteCalls(r.Context(), kept); err != nil {
		v.fail(w, "reading the audit table", err)
		return
	}
	for _, c := range kept {
		line := callLine{Row: *c.Outcome(), Call: c}
		if rs := c.Rows(); len(rs) > 1 {
			line.Other = rs[1]
		}
		p.Rows = append(p.Rows, line)
	}
	render(w, "calls", p)
}
