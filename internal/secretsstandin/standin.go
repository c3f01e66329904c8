// Package secretsstandin is a local stand-in for the part of the AWS Secrets
// Manager API that mcpfn uses: GetSecretValue (by version stage) and
// PutSecretValue (which rotates: the new version becomes AWSCURRENT, the old
// one AWSPREVIOUS). It speaks the real wire protocol (JSON 1.1 over HTTP), so
// the functions and the gateway load their call keys through the AWS SDK
// exactly as on AWS, with AWS_ENDPOINT_URL_SECRETS_MANAGER pointing here. No
// Secrets Manager emulator ships as a Go module, npm or Debian package.
//
// It holds call keys, so before anything else it refuses what a web page in
// the developer's browser can send to a loopback port: a foreign Host (DNS
// rebinding) and browser requests (internal/localonly) — from its first
// request, guard or no guard.
package secretsstandin

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpfn/mcpfn/internal/localonly"
)

// Region and account the stand-in's ARNs name.
const (
	Region  = "us-east-1"
	Account = "000000000000"
)

// Guard decides a request before the stand-in serves it: who signed it
// (Signature Version 4) and whether they may perform action
// ("secretsmanager:GetSecretValue") on the secret secretARN. A non-nil
// Refusal is answered instead (the local stack enforces the template's IAM
// with it). body is the request's whole body.
type Guard func(r *http.Request, body []byte, action, secretARN string) *Refusal

// Refusal is an error answer: AWS's error code, its message, the HTTP
// status (400 when zero, as Secrets Manager answers).
type Refusal struct {
	Status        int
	Code, Message string
}

// Server serves secrets on a loopback port.
type Server struct {
	URL string

	guard atomic.Pointer[Guard]
	hosts atomic.Pointer[[]string]

	mu      sync.Mutex
	secrets map[string]*secret // by name
	srv     *http.Server
	now     func() time.Time
}

type secret struct {
	versions []version // newest last
}

type version struct {
	id      string
	value   string
	created time.Time
	stages  []string
}

// Start listens on addr ("127.0.0.1:0" for any free port).
func Start(addr string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{URL: "http://" + ln.Addr().String(), secrets: map[string]*secret{}, now: time.Now}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// SetGuard makes every later request pass g first. Without a guard the
// stand-in serves every loopback, non-browser request (the gateway's and
// calltoken's own tests).
func (s *Server) SetGuard(g Guard) { s.guard.Store(&g) }

// AllowHosts makes the stand-in serve these Host values too ("name" or
// "name:port"), besides loopback ones: the local stack's
// MCPFN_LOCAL_INVOKE_HOSTS, e.g. host.docker.internal.
func (s *Server) AllowHosts(hosts ...string) { s.hosts.Store(&hosts) }

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }

// ARN is the ARN the stand-in gives the secret name.
func ARN(name string) string {
	return fmt.Sprintf("arn:aws:secretsmanager:%s:%s:secret:%s", Region, Account, name)
}

// Put stores value as the new current version of name (creating the secret),
// as PutSecretValue does.
func (s *Server) Put(name, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sec := s.secrets[name]
	if sec == nil {
		sec = &secret{}
		s.secrets[name] = sec
	}
	for i := range sec.versions {
		v := &sec.versions[i]
		switch {
		case has(v.stages, "AWSCURRENT"):
			v.stages = []string{"AWSPREVIOUS"}
		case has(v.stages, "AWSPREVIOUS"):
			v.stages = nil
		}
	}
	sec.versions = append(sec.versions, version{id: rand.Text(), value: value, created: s.now(), stages: []string{"AWSCURRENT"}})
}

// Generate stores a random alphanumeric value of n characters as name's new
// current version, as GenerateSecretString does, and returns it.
func (s *Server) Generate(name string, n int) string {
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alnum[int(b[i])%len(alnum)]
	}
	s.Put(name, string(b))
	return string(b)
}

// Current returns name's AWSCURRENT value.
func (s *Server) Current(name string) (string, bool) {
	v, ok := s.get(name, "AWSCURRENT")
	return v.value, ok
}

func (s *Server) get(name, stage string) (version, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sec := s.secrets[name]
	if sec == nil {
		return version{}, false
	}
	for _, v := range sec.versions {
		if has(v.stages, stage) {
			return v, true
		}
	}
	return version{}, false
}

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// nameOf accepts a name or the stand-in's ARN (a real secret ARN ends in a
// random suffix; the stand-in's ends in the name).
func nameOf(id string) string {
	if i := strings.LastIndex(id, ":secret:"); i >= 0 {
		return id[i+len(":secret:"):]
	}
	return id
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var hosts []string
	if h := s.hosts.Load(); h != nil {
		hosts = *h
	}
	if why := localonly.Refuse(r, hosts...); why != "" {
		writeErrorStatus(w, http.StatusForbidden, "AccessDeniedException", why)
		return
	}
	target := r.Header.Get("X-Amz-Target")
	var in struct {
		SecretID     string `json:"SecretId"`
		VersionStage string `json:"VersionStage"`
		SecretString string `json:"SecretString"`
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if r.Method != http.MethodPost || err != nil || json.Unmarshal(body, &in) != nil {
		writeError(w, "InvalidRequestException", "malformed request")
		return
	}
	name := nameOf(in.SecretID)
	if g := s.guard.Load(); g != nil {
		op, _ := strings.CutPrefix(target, "secretsmanager.")
		if no := (*g)(r, body, "secretsmanager:"+op, ARN(name)); no != nil {
			writeErrorStatus(w, no.Status, no.Code, no.Message)
			return
		}
	}
	switch target {
	case "secretsmanager.GetSecretValue":
		stage := in.VersionStage
		if stage == "" {
			stage = "AWSCURRENT"
		}
		v, ok := s.get(name, stage)
		if !ok {
			writeError(w, "ResourceNotFoundException", "Secrets Manager can't find the specified secret value for staging label: "+stage)
			return
		}
		writeJSON(w, map[string]any{
			"ARN": ARN(name), "Name": name, "SecretString": v.value, "VersionId": v.id,
			"VersionStages": v.stages, "CreatedDate": float64(v.created.UnixMilli()) / 1000,
		})
	case "secretsmanager.PutSecretValue":
		if len(in.SecretString) == 0 {
			writeError(w, "InvalidParameterException", "SecretString is required")
			return
		}
		s.Put(name, in.SecretString)
		v, _ := s.get(name, "AWSCURRENT")
		writeJSON(w, map[string]any{"ARN": ARN(name), "Name": name, "VersionId": v.id, "VersionStages": v.stages})
	default:
		writeError(w, "InvalidAction", "the stand-in serves GetSecretValue and PutSecretValue only, not "+target)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, typ, msg string) {
	writeErrorStatus(w, http.StatusBadRequest, typ, msg)
}

func writeErrorStatus(w http.ResponseWriter, status int, typ, msg string) {
	if status == 0 {
		status = http.StatusBadRequest
	}
	key := "message"
	if typ == "AccessDeniedException" {
		key = "Message"
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-ErrorType", typ)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": typ, key: msg})
}
