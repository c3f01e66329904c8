package viewer

import (
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/mcpfn/mcpfn/audit"
)

// Waterfall geometry: the bars' column is this wide (CSS pixels).
const waterfallWidth = 600

// node is one line of a trace: an X-Ray segment, an audit row, or both (a
// call's row and its subsegment share the span id).
type node struct {
	ID, ParentID string
	Name         string
	Kind         string // see kindOf
	Start, End   time.Time
	Segment      *Segment
	Row          *audit.Row
	Failed       bool

	Depth    int
	Indent   int // Depth in CSS pixels
	X, W     int // the bar, in waterfall pixels
	children []*node
}

// Duration of the node.
func (n *node) Duration() time.Duration { return n.End.Sub(n.Start) }

type tick struct {
	X      int
	Label  string
	Anchor string // text-anchor: the end ticks' labels stay inside the axis
}

type tracePage struct {
	TraceID       string
	Nodes         []*node
	Rows          int
	Segments      int
	SegmentsError string
	NoSegments    bool // no source configured
	Start         time.Time
	Total         time.Duration
	Ticks         []tick
	Width         int
}

func (v *Viewer) trace(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	rows, err := v.cfg.Auditor.TraceRows(r.Context(), id)
	if err != nil {
		v.fail(w, "reading the audit table", err)
		return
	}
	p := tracePage{TraceID: id, Rows: len(rows), Width: waterfallWidth, NoSegments: v.cfg.Segments == nil}
	var segs []Segment
	if v.cfg.Segments != nil {
		if segs, err = v.cfg.Segments.Segments(r.Context(), id); err != nil {
			// Rows without segments are still worth showing.
			p.SegmentsError = err.Error()
		}
	}
	p.Segments = len(segs)
	p.Nodes = layoutTrace(rows, segs, &p)
	if len(rows) == 0 && len(segs) == 0 {
		w.WriteHeader(http.StatusNotFound)
	}
	render(w, "trace", p)
}

// layoutTrace joins rows and segments by span id, builds the tree (a node
// under the node whose id is its parent; the others are roots), orders
// siblings by start, and lays the bars out on one time axis.
func layoutTrace(rows []audit.Row, segs []Segment, p *tracePage) []*node {
	byID := map[string]*node{}
	var all []*node
	get := func(id string) *node {
		if n := byID[id]; n != nil && id != "" {
			return n
		}
		n := &node{ID: id}
		if id != "" {
			byID[id] = n
		}
		all = append(all, n)
		return n
	}
	for i := range segs {
		s := &segs[i]
		n := get(s.ID)
		if n.Segment != nil {
			continue // a duplicate document (in-progress then complete): keep the first
		}
		n.Segment, n.ParentID, n.Name = s, s.ParentID, s.Name
		n.Start, n.End = s.Start, s.End
		n.Failed = s.Error || s.Fault || s.Throttle
	}
	for i := range rows {
		rw := &rows[i]
		n := get(rw.SpanID)
		if n.Row != nil {
			n = get("") // two rows with one span id: show both
		}
		n.Row, n.ParentID, n.Name = rw, rw.ParentSpanID, rw.Tool
		n.Start = rw.StartedAt
		n.End = rw.StartedAt.Add(time.Duration(rw.DurationMs * float64(time.Millisecond)))
		n.Failed = !rw.OK
	}
	// A call's rows by two writers are two lines (each has its own span);
	// their kind says which is the call's outcome.
	calls := map[string]audit.Call{}
	for _, c := range audit.JoinCalls(rows) {
		calls[c.CallID] = c
	}
	var roots []*node
	for _, n := range all {
		n.Kind = kindOf(n)
		if n.Row != nil {
			if c := calls[n.Row.CallID]; c.Function != nil && c.Gateway != nil {
				n.Kind += outcomeNote(&c, n.Row)
			}
		}
		if par := byID[n.ParentID]; par != nil && n.ParentID != n.ID {
			par.children = append(par.children, n)
		} else {
			roots = append(roots, n)
		}
	}
	var t0, t1 time.Time
	for _, n := range all {
		if n.End.Before(n.Start) {
			n.End = n.Start
		}
		if t0.IsZero() || n.Start.Before(t0) {
			t0 = n.Start
		}
		if n.End.After(t1) {
			t1 = n.End
		}
	}
	total := t1.Sub(t0)
	p.Start, p.Total = t0, total
	scale := func(t time.Time) int {
		if total <= 0 {
			return 0
		}
		return int(float64(t.Sub(t0)) / float64(total) * waterfallWidth)
	}
	for i := 0; i <= 4; i++ {
		anchor := "middle"
		switch i {
		case 0:
			anchor = "start"
		case 4:
			anchor = "end"
		}
		p.Ticks = append(p.Ticks, tick{X: i * waterfallWidth / 4, Label: formatDuration(total * time.Duration(i) / 4), Anchor: anchor})
	}
	var out []*node
	seen := map[*node]bool{} // bad data must not loop
	var walk func(ns []*node, depth int)
	walk = func(ns []*node, depth int) {
		sort.SliceStable(ns, func(i, j int) bool { return ns[i].Start.Before(ns[j].Start) })
		for _, n := range ns {
			if seen[n] {
				continue
			}
			seen[n] = true
			n.Depth, n.Indent = depth, depth*18
			n.X = scale(n.Start)
			n.W = max(1, scale(n.End)-n.X)
			out = append(out, n)
			walk(n.children, depth+1)
		}
	}
	walk(roots, 0)
	return out
}

// outcomeNote says whether r, one of the two rows of call c, is its
// outcome.
func outcomeNote(c *audit.Call, r *audit.Row) string {
	if c.Outcome() == r {
		return ", the call's outcome"
	}
	return ", not the outcome: the " + rowName(*c.Outcome()) + " row is"
}

// kindOf names what a node is, as the page labels it.
func kindOf(n *node) string {
	switch {
	case n.Row != nil && audit.IsGatewayRow(n.Row):
		return "gateway's row (the function did not answer it)"
	case n.Row != nil && n.Row.Writer != "" && n.Row.Writer != n.Row.Tool:
		return "row by " + n.Row.Writer
	case n.Row != nil:
		if n.Segment != nil {
			return "tool call (row + subsegment)"
		}
		return "tool call (row)"
	case n.Segment.Operation == "lambda:Invoke":
		return "forward (lambda:Invoke)"
	case n.Segment.Origin == "AWS::Lambda::Function" && !n.Segment.Subsegment:
		return "function segment"
	case n.Segment.Origin == "AWS::Lambda":
		return "Lambda service segment"
	case n.Segment.Subsegment:
		return "subsegment"
	}
	return fmt.Sprintf("segment %s", n.Segment.Origin)
}
