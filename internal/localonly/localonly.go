// Package localonly is the check every endpoint of the local stack makes
// before anything else (DESIGN.md §5): it serves loopback Host names only
// and no browser requests. The stack's endpoints listen on loopback, so
// nothing elsewhere on the network reaches them, but a web page open in the
// developer's browser does: through DNS rebinding (its own name resolving
// to 127.0.0.1, so the browser treats the answers as its own, readable),
// or by simply sending requests there (forms, <img>, no-cors fetch). The
// AWS SDKs and CLI send a loopback Host and neither Origin nor
// Sec-Fetch-Site, so they never notice.
package localonly

import (
	"fmt"
	"net"
	"net/http"
	"strings"
)

// Refuse says why r must not be served, or "" when it may: its Host is not
// a loopback name (localhost, *.localhost, a loopback address) or one of
// hosts ("name" or "name:port"), or a browser sent it on a page's behalf
// (any Origin; Sec-Fetch-Site other than "none", which only a person typing
// the address produces).
func Refuse(r *http.Request, hosts ...string) string {
	if !Host(r.Host, hosts...) {
		return fmt.Sprintf("host %q is not served by the local stack (loopback only)", r.Host)
	}
	if r.Header.Get("Origin") != "" {
		return "browser requests (Origin) are not served by the local stack"
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "none" {
		return "browser requests (Sec-Fetch-Site) are not served by the local stack"
	}
	return ""
}

// Host reports whether hostport (a request's Host) names loopback —
// localhost, a name under .localhost, an address in 127.0.0.0/8 or ::1 — or
// one of hosts, compared without case either as a name or as name:port.
func Host(hostport string, hosts ...string) bool {
	host := strings.ToLower(hostport)
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return true
	}
	for _, h := range hosts {
		if strings.EqualFold(h, host) || strings.EqualFold(h, hostport) {
			return true
		}
	}
	return false
}
