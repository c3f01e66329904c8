package audit

import (
	"strings"
	"testing"
)

// What a caller says about itself — User-Agent, Mcp-Session-Id, client
// info, a traceparent, a claimed identity — is scrubbed like any free text
// before a row is written or replayed. The adversarial suite found a
// bearer token in a User-Agent and a session id stored verbatim.
func TestScrubRowAttribution(t *testing.T) {
	const secret = "Bearer sk-live-0123456789abcdefghij"
	jwt := "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJlLXNpZ25hdHVyZQ"
	for _, replayed := range []bool{false, true} {
		r := &Row{CallID: "c", SessionID: secret, CallerUserAgent: "curl/8 " + secret, ClientName: jwt, ClientVersion: secret,
			LinkedTraceparent: secret, UnverifiedCaller: jwt + "@issuer", CallerRoleSession: secret,
			ProtocolVersion: secret, MCPMethod: jwt, MCPEra: secret}
		scrubRow(r, replayed)
		for name, v := range map[string]string{"sessionId": r.SessionID, "callerUserAgent": r.CallerUserAgent, "clientName": r.ClientName,
			"clientVersion": r.ClientVersion, "linkedTraceparent": r.LinkedTraceparent, "unverifiedCaller": r.UnverifiedCaller, "callerRoleSession": r.CallerRoleSession,
			"protocolVersion": r.ProtocolVersion, "mcpMethod": r.MCPMethod, "mcpEra": r.MCPEra} {
			if strings.Contains(v, "sk-live-0123") || strings.Contains(v, "c2lnbmF0dXJl") {
				t.Errorf("replayed=%v: %s keeps the secret: %q", replayed, name, v)
			}
		}
		if !strings.HasPrefix(r.CallerUserAgent, "curl/8 ") {
			t.Errorf("the user agent lost what is not secret: %q", r.CallerUserAgent)
		}
	}
	// Ordinary attribution is kept as it is.
	r := &Row{SessionID: "550e8400-e29b-41d4-a716-446655440000", CallerUserAgent: "mcp-client/1.0", ClientName: "inspector", ClientVersion: "0.17.0",
		ProtocolVersion: "2026-07-28", MCPMethod: "tools/call", MCPEra: "modern"}
	scrubRow(r, false)
	if r.SessionID != "550e8400-e29b-41d4-a716-446655440000" || r.CallerUserAgent != "mcp-client/1.0" || r.ClientName != "inspector" || r.ClientVersion != "0.17.0" ||
		r.ProtocolVersion != "2026-07-28" || r.MCPMethod != "tools/call" || r.MCPEra != "modern" {
		t.Errorf("ordinary attribution changed: %+v", r)
	}
}

func TestIsCredentialShaped(t *testing.T) {
	for _, v := range []string{"Bearer abc.def", "sk-live-0123456789abcdefghij", "ghp_0123456789abcdefghijABCD",
		"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJlLXNpZ25hdHVyZQ"} {
		if !IsCredentialShaped(v) || !IsSecretValue(v) {
			t.Errorf("%q is a credential", v)
		}
	}
	// Random-looking ids are not credentials by their form.
	for _, v := range []string{"TestCreateGetListDelete-call-1", "5f0c1e7a9b2d4c3e8f7a6b5c4d3e2f10", "0ujsswThIGTUYm2K8FjOOfXtY1K", "req-1"} {
		if IsCredentialShaped(v) {
			t.Errorf("%q is taken for a credential", v)
		}
	}
}

// scrubTextEveryExpression is scrubText running every expression on every
// text: what scrubText's checks may skip must change nothing.
func scrubTextEveryExpression(s string) string {
	if strings.Contains(s, "PRIVATE KEY-----") {
		s = rePEM().ReplaceAllLiteralString(s, Redacted)
	}
	s = maskKeyValues(s)
	s = reAuthScheme().ReplaceAllString(s, "${1}${2}"+Redacted)
	return reTokenWord().ReplaceAllStringFunc(s, func(w string) string {
		if IsSecretValue(w) {
			return Redacted
		}
		return w
	})
}

var scrubTextSeeds = []string{
	"", "mcp-inspector/0.17.2", "Go-http-client/1.1", "tools/call", "2025-11-25",
	"Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345",
	"BASIC dXNlcjpwYXNzd29yZA==", "baſic abcdefghijklmnop", "bEaReR x",
	"password=hunter2", `{"api_key":"sk-live-0123456789abcdef0123"}`, "token: \\\"x\\\"",
	"ghp_0123456789abcdefghijklmnopqrstuvwxyzAB", "AKIAIOSFODNN7EXAMPLE",
	"-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
	"a123456789012345", "a12345678901234 5", "\u212a basic", "dial tcp 10.0.0.1:443: i/o timeout",
}

func TestScrubTextSkipsOnlyWhatCannotMatch(t *testing.T) {
	for _, s := range scrubTextSeeds {
		if got, want := scrubText(s), scrubTextEveryExpression(s); got != want {
			t.Errorf("%q: got %q, want %q", s, got, want)
		}
	}
}

func FuzzScrubTextSkipsOnlyWhatCannotMatch(f *testing.F) {
	for _, s := range scrubTextSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := scrubText(s), scrubTextEveryExpression(s); got != want {
			t.Fatalf("%q: got %q, want %q", s, got, want)
		}
	})
}
