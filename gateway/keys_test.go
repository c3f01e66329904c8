package gateway

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/mcpfn/mcpfn/internal/secretsstandin"
)

// secretReads is a Secrets Manager stand-in guard that records which
// version of which secret the gateway reads, refusing the previous version
// of every call key (as a role allowed only the current one would be).
type secretReads struct {
	mu      sync.Mutex
	session string // the session key's ARN: both its versions may be read
	reads   map[string]int
}

func (s *secretReads) guard(_ *http.Request, body []byte, _, arn string) *secretsstandin.Refusal {
	var in struct{ VersionStage string }
	_ = json.Unmarshal(body, &in)
	s.mu.Lock()
	defer s.mu.Unlock()
	kind := "call key "
	if arn == s.session {
		kind = "session key "
	}
	s.reads[kind+in.VersionStage]++
	if kind == "call key " && in.VersionStage == "AWSPREVIOUS" {
		return &secretsstandin.Refusal{Code: "AccessDeniedException", Message: "not the signer's"}
	}
	return nil
}

func (s *secretReads) count(what string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads[what]
}

// The gateway signs with each function's current call key and verifies
// none: at cold start it reads no previous version of a call key (one
// Secrets Manager read per function fewer), and serves after a rotation
// even where it may not read one. It still reads both versions of its own
// session key, whose previous version verifies the session ids and task
// records sealed before a rotation.
func TestGatewayReadsOnlyTheCurrentCallKeys(t *testing.T) {
	e := newEnv(t)
	for _, fn := range e.cat.functions() {
		e.secrets.Generate(fn+"-key", 64) // rotated: every call key has AWSPREVIOUS
	}
	e.secrets.Generate("session-key", 64)
	e.secrets.Generate("session-key", 64)
	reads := &secretReads{session: secretsstandin.ARN("session-key"), reads: map[string]int{}}
	e.secrets.SetGuard(reads.guard)
	cfg := e.cfgUsed
	cfg.SessionKeySecret = secretsstandin.ARN("session-key")
	gw, err := New(cfg)
	if err != nil {
		t.Fatalf("a gateway that may not read its call keys' previous versions: %v", err)
	}
	t.Cleanup(func() { _ = gw.Close() })
	if n := reads.count("call key AWSPREVIOUS"); n != 0 {
		t.Fatalf("the gateway read a call key's previous version %d times", n)
	}
	if n, want := reads.count("call key AWSCURRENT"), len(e.cat.functions()); n != want {
		t.Fatalf("the gateway read %d current call keys, want %d", n, want)
	}
	if reads.count("session key AWSCURRENT") != 1 || reads.count("session key AWSPREVIOUS") != 1 || len(gw.sessions) != 2 || len(gw.records) != 2 {
		t.Fatalf("session key: reads %v, %d session keys, %d record keys; want both versions", reads.reads, len(gw.sessions), len(gw.records))
	}
	// It serves: the function (whose role reads both versions) verifies the
	// call signed with the new key.
	e.secrets.SetGuard(func(*http.Request, []byte, string, string) *secretsstandin.Refusal { return nil })
	e.gw, e.srv = gw, httptest.NewServer(gw)
	t.Cleanup(e.srv.Close)
	e.mcpURL = e.srv.URL + "/mcp"
	cs := e.mustConnect(t, "writer", "", bearer(e.iss.token(t, "wendy", nil)))
	if f := factsFrom(t, callTool(t, cs, "echo_call", map[string]any{"entityId": "current-key"})); f.Subject != "wendy" {
		t.Fatalf("facts %+v", f)
	}
}
