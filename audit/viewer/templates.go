package viewer

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"time"

	"github.com/mcpfn/mcpfn/audit"
)

//go:embed templates/*.html templates/style.css
var files embed.FS

var funcs = template.FuncMap{
	"ts": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05.000")
	},
	"ms":       func(f float64) string { return fmt.Sprintf("%.1f ms", f) },
	"dur":      formatDuration,
	"pct":      func(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) },
	"callPath": callPath,
	"tracePath": func(id string) string {
		return "/trace/" + url.PathEscape(id)
	},
	"callerKey": func(r audit.Row) string { return audit.CallerKeyOf(&r) },
	"rowName":   rowName,
	"rowState":  rowState,
	// filter is the calls page with one filter set.
	"filter": func(name, value string) string {
		return "/?" + url.Values{name: {value}}.Encode()
	},
}

// callPath is the call page of a row.
func callPath(r audit.Row) string {
	return "/call/" + url.PathEscape(audit.WriterOf(&r)) + "/" + url.PathEscape(r.CallID)
}

// rowName says who wrote a row: "gateway's" or "function's".
func rowName(r audit.Row) string {
	if audit.IsGatewayRow(&r) {
		return "gateway's"
	}
	return "function's"
}

// rowState is a row's outcome in a word: pending, ok or its error code.
func rowState(r audit.Row) string {
	switch {
	case r.Status == audit.StatusPending:
		return "pending"
	case r.OK:
		return "ok"
	case r.ErrorCode != "":
		return r.ErrorCode
	}
	return "error"
}

func formatDuration(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	default:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	}
}

// pages are parsed once; each is the layout plus its own body.
var pages = map[string]*template.Template{
	"calls": page("calls.html"),
	"trace": page("trace.html"),
	"call":  page("call.html"),
}

func page(name string) *template.Template {
	return template.Must(template.New("layout.html").Funcs(funcs).ParseFS(files, "templates/layout.html", "templates/"+name))
}

// render executes a page into a buffer first, so a template error is a 500
// and never half a page.
func render(w http.ResponseWriter, name string, data any) {
	var b bytes.Buffer
	if err := pages[name].Execute(&b, data); err != nil {
		http.Error(w, "viewer: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(b.Bytes())
}

func serveCSS(w http.ResponseWriter, r *http.Request) {
	b, _ := files.ReadFile("templates/style.css")
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	_, _ = w.Write(b)
}
