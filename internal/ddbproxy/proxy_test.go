package ddbproxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpfn/mcpfn/internal/iam"
)

// TestProxyServesLoopbackAndNoBrowsers (issue 20, L4): the local DynamoDB
// endpoint, told nothing else, refuses a foreign Host (DNS rebinding) and
// requests a browser sends for a page (Origin, Sec-Fetch-Site) with 403
// before it reads the request, let alone forwards it; a loopback request
// without either goes on to the signature check.
func TestProxyServesLoopbackAndNoBrowsers(t *testing.T) {
	var reached atomic.Int32
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached.Add(1) }))
	t.Cleanup(upstream.Close)
	p := &Proxy{Upstream: upstream.URL, Authority: iam.NewAuthority("us-east-1", "000000000000")}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	send := func(host string, header map[string]string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.URL+"/", strings.NewReader(`{"TableName":"AuditTable"}`))
		req.Host = host
		req.Header.Set("Content-Type", "application/x-amz-json-1.0")
		req.Header.Set("X-Amz-Target", "DynamoDB_20120810.Scan")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for name, c := range map[string]struct {
		host   string
		header map[string]string
	}{
		"rebinding":            {"rebound.example:" + port, nil},
		"a page's fetch":       {"127.0.0.1:" + port, map[string]string{"Origin": "http://evil.example"}},
		"a page's form":        {"127.0.0.1:" + port, map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"}},
		"another local origin": {"localhost:" + port, map[string]string{"Sec-Fetch-Site": "same-site"}},
	} {
		if code, body := send(c.host, c.header); code != http.StatusForbidden || !strings.Contains(body, "AccessDeniedException") || !strings.Contains(body, "not served by the local stack") {
			t.Errorf("%s: %d %s, want 403 AccessDeniedException", name, code, body)
		}
	}
	// Past the check: the signature is what refuses this one.
	if code, body := send("127.0.0.1:"+port, nil); code != http.StatusBadRequest || strings.Contains(body, "not served by the local stack") {
		t.Errorf("a loopback request from no browser: %d %s, want the signature check's answer", code, body)
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("%d requests reached DynamoDB", n)
	}
}
