// Package viewer is the audit viewer: a read-only web page over the audit
// table, served by `mcpfn-audit serve` and by `make local`. It lists calls
// (newest first, filterable), per-tool counts, error rates and latency
// distributions, one trace as a tree and a waterfall joined with its X-Ray
// segments, and one call's row in full.
//
// Everything is rendered on the server with html/template (no JavaScript at
// all; the Content-Security-Policy forbids scripts), so every value of a row,
// argument previews included, is escaped text. It only reads: GET and HEAD,
// nothing else. Like the gateway it answers only requests whose Host it
// expects — loopback names unless told otherwise — so a web page elsewhere
// cannot reach it through DNS rebinding, and it refuses the requests a
// page elsewhere makes the browser send (Sec-Fetch-Site, Origin), so no
// such page can make it Scan the table. See docs/viewer.md.
package viewer

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/mcpfn/mcpfn/audit"
)

// DefaultAddr is where `mcpfn-audit serve` listens by default: loopback,
// beside the local stack's gateway (8080), issuer (8081) and AgentCore
// front (8082).
const DefaultAddr = "127.0.0.1:8083"

// Config configures a [Viewer]. Auditor is required.
type Config struct {
	// Auditor reads the audit table. Its client must also Scan (the
	// *dynamodb.Client does) for the listing of all calls.
	Auditor *audit.Auditor
	// Segments finds a trace's X-Ray segments; nil shows rows only.
	Segments SegmentSource
	// AllowedHosts are Host names served besides loopback ones
	// (localhost, 127.0.0.0/8, ::1), with any port.
	AllowedHosts []string
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger receives failures to read the table (default: discarded).
	Logger *slog.Logger
}

// Viewer is the viewer's http.Handler.
type Viewer struct {
	cfg   Config
	hosts map[string]bool
	mux   *http.ServeMux
}

// New returns the viewer.
func New(cfg Config) (*Viewer, error) {
	if cfg.Auditor == nil {
		return nil, errors.New("viewer: no auditor")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	v := &Viewer{cfg: cfg, hosts: map[string]bool{}, mux: http.NewServeMux()}
	for _, h := range cfg.AllowedHosts {
		v.hosts[strings.ToLower(h)] = true
	}
	v.mux.HandleFunc("GET /{$}", v.calls)
	v.mux.HandleFunc("GET /trace/{id}", v.trace)
	v.mux.HandleFunc("GET /call/{writer}/{id}", v.call)
	v.mux.HandleFunc("GET /style.css", serveCSS)
	return v, nil
}

// ServeHTTP checks the Host and the method, sets the security headers and
// dispatches.
func (v *Viewer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !v.hostAllowed(r.Host) {
		http.Error(w, "Misdirected Request: this viewer does not serve host "+r.Host, http.StatusMisdirectedRequest)
		return
	}
	if why := crossSite(r); why != "" {
		http.Error(w, "Forbidden: "+why+"; open the viewer's address yourself (typed, bookmarked, or from its own pages)", http.StatusForbidden)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "Method Not Allowed: the viewer is read-only", http.StatusMethodNotAllowed)
		return
	}
	h := w.Header()
	// No script may run, whatever a row holds; styles only from the
	// viewer itself; no framing, no referrer leaking trace ids.
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	// Nothing of the viewer's may be embedded by another origin.
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	v.mux.ServeHTTP(w, r)
}

func (v *Viewer) hostAllowed(host string) bool {
	host = strings.ToLower(host)
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" || v.hosts[host] {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// crossSite says why r is a request another site made the browser send, or
// "" when it is not. A web page can make the operator's browser GET any
// address — an <img src>, a link, a form, a no-cors fetch — and each
// listing is a Scan with the operator's credentials, so the Host check
// (against DNS rebinding) is not enough. Browsers mark every request with
// Sec-Fetch-Site, which no page can set: only "same-origin" (the viewer's
// own pages and forms) and "none" (an address typed, a bookmark) are
// served; "same-site" is refused too, since a page on another port of
// localhost is same-site. A browser without Fetch Metadata still sends
// Origin on a fetch: it must be the viewer's own. A request with neither
// is no browser's (curl, the SDK) or a browser's that marks nothing (Safari
// before 16.4): served; docs/viewer.md says what that leaves.
func crossSite(r *http.Request) string {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" {
		if site == "same-origin" || site == "none" {
			return ""
		}
		return "a request from another site (Sec-Fetch-Site: " + site + ")"
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || !strings.EqualFold(u.Host, r.Host) {
			return "a request from another origin (Origin: " + origin + ")"
		}
	}
	return ""
}

// Serve serves the viewer on ln until ctx ends.
func (v *Viewer) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: v, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// fail answers a page whose data could not be read.
func (v *Viewer) fail(w http.ResponseWriter, what string, err error) {
	v.cfg.Logger.Warn("mcpfn viewer: "+what, "error", err)
	http.Error(w, what+": "+err.Error(), http.StatusBadGateway)
}
