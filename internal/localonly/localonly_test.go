package localonly

import (
	"net/http/httptest"
	"testing"
)

// TestRefuse: loopback names and the extra hosts are served; any other
// Host, any Origin and a Sec-Fetch-Site a page produces are refused.
func TestRefuse(t *testing.T) {
	cases := []struct {
		host   string
		header map[string]string
		served bool
	}{
		{"127.0.0.1:8000", nil, true},
		{"127.0.0.2", nil, true},
		{"localhost:4566", nil, true},
		{"api.localhost:1", nil, true},
		{"[::1]:8000", nil, true},
		{"host.docker.internal:8000", nil, true}, // an extra host
		{"rebound.example:8000", nil, false},
		{"127.0.0.1.nip.io:8000", nil, false},
		{"", nil, false},
		{"127.0.0.1:8000", map[string]string{"Origin": "http://127.0.0.1:8000"}, false},
		{"127.0.0.1:8000", map[string]string{"Origin": "null"}, false},
		{"127.0.0.1:8000", map[string]string{"Sec-Fetch-Site": "cross-site"}, false},
		{"127.0.0.1:8000", map[string]string{"Sec-Fetch-Site": "same-site"}, false},
		{"127.0.0.1:8000", map[string]string{"Sec-Fetch-Site": "same-origin"}, false},
		{"127.0.0.1:8000", map[string]string{"Sec-Fetch-Site": "none"}, true},
	}
	for _, c := range cases {
		r := httptest.NewRequest("POST", "/", nil)
		r.Host = c.host
		for k, v := range c.header {
			r.Header.Set(k, v)
		}
		if why := Refuse(r, "host.docker.internal"); (why == "") != c.served {
			t.Errorf("Host %q %v: refusal %q, want served=%v", c.host, c.header, why, c.served)
		}
	}
}
