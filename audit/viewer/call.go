package viewer

import (
	"encoding/json"
	"net/http"
	"sort"

	"github.com/mcpfn/mcpfn/audit"
)

type callPage struct {
	Row audit.Row // the row shown in full
	// CallRows are the call's rows (the function's, the gateway's), the
	// outcome first.
	CallRows   []callRow
	CallerKey  string
	Dimensions []kv
	Details    string // errorDetails, indented
	Preview    string // ArgsPreview, indented and readable (readablePreview)
}

type kv struct{ K, V string }

// callRow is one of a call's rows as the call page links it.
type callRow struct {
	Row     audit.Row
	Outcome bool // the call's outcome (audit.Call)
	Shown   bool // the row this page shows
}

// call shows one row in full: arguments preview, dimensions, the error as
// the caller was told it and the raw error the audit kept (shown to
// whoever runs the viewer: their AWS credentials could read it anyway).
func (v *Viewer) call(w http.ResponseWriter, r *http.Request) {
	row, ok, err := v.cfg.Auditor.CallRow(r.Context(), r.PathValue("writer"), r.PathValue("id"))
	if err != nil {
		v.fail(w, "reading the audit table", err)
		return
	}
	if !ok {
		http.Error(w, "no such call", http.StatusNotFound)
		return
	}
	p := callPage{Row: row, CallerKey: audit.CallerKeyOf(&row), Preview: readablePreview(row.ArgsPreview)}
	// The call's other row, if its other writer wrote one: which of them
	// is the outcome is said on the page.
	calls := audit.JoinCalls([]audit.Row{row})
	if err := v.cfg.Auditor.CompleteCalls(r.Context(), calls); err != nil {
		v.fail(w, "reading the audit table", err)
		return
	}
	c := calls[0]
	for i, cr := range c.Rows() {
		p.CallRows = append(p.CallRows, callRow{Row: *cr, Outcome: i == 0, Shown: audit.IsGatewayRow(cr) == audit.IsGatewayRow(&row)})
	}
	for k, val := range row.Dimensions {
		p.Dimensions = append(p.Dimensions, kv{k, val})
	}
	sort.Slice(p.Dimensions, func(i, j int) bool { return p.Dimensions[i].K < p.Dimensions[j].K })
	if len(row.ErrorDetails) > 0 {
		var x any
		if json.Unmarshal(row.ErrorDetails, &x) == nil {
			b, _ := json.MarshalIndent(x, "", "  ")
			p.Details = string(b)
		} else {
			p.Details = string(row.ErrorDetails)
		}
	}
	render(w, "call", p)
}
