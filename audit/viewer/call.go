package viewer

import (
	"encoding/json"
	"net/http"
	"sort"

	"github.com/mcpfn/mcpfn/audit"
)

type callPage struct {
	Row        audit.Row
	CallerKey  string
	Dimensions []kv
	Details    string // errorDetails, indented
	Preview    string // ArgsPreview, indented and readable (readablePreview)
}

type kv struct{ K, V string }

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
