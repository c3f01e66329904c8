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
