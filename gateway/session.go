package gateway

import (
	"context"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"

	"github.com/mcpfn/mcpfn/calltoken"
	"github.com/mcpfn/mcpfn/taskstore"
	"github.com/mcpfn/mcpfn/wire"
)

// Session ids of the initialize-era protocol versions (2025-03-26 …
// 2025-11-25), docs/decisions/0030.
//
// The gateway keeps no session state, yet a legacy client's
// notifications/cancelled names a request by its JSON-RPC id, which every
// new client numbers from 0: keyed by the caller alone, one client's cancel
// would stop another's call. So the gateway mints an Mcp-Session-Id on each
// initialize, and a cancel marker of a client that presents one is keyed by
// owner, session and request id. The id is a nonce and a MAC over the owner
// and the nonce with a key only the gateway holds (MCPFN_SESSION_KEY_SECRET):
// any instance verifies it without a store, and it is worth nothing to
// another caller. An id the gateway cannot verify (made up, another owner's,
// minted under a key since rotated away) stays what every header is,
// caller data, and scopes nothing. 2026-07-28 has no sessions: its header
// is ignored, and its cancel is the closed stream (cancel.go).

// sessionPrefix starts every session id the gateway mints: version 1.
const sessionPrefix = "mcpfn1."

// sessionMACBytes is the length of the MAC in a session id (128 bits).
const sessionMACBytes = 16

// sessionKeys mint and verify session ids. The first key mints; every key
// verifies (the secret's previous version, during a rotation).
type sessionKeys [][]byte

// loadSessionKeys sets the gateway's session keys, and the keys its task
// records are sealed with (records.go), from Config.SessionKeySecret, or
// random keys of this process.
func (g *Gateway) loadSessionKeys(ctx context.Context, clients *awsClients) error {
	if g.cfg.SessionKeySecret == "" {
		g.sessions = randomSessionKeys()
		g.records = randomRecordKeys()
		if os.Getenv("AWS_LAMBDA_FUNCTION_NAME") != "" {
			if g.cfg.Tasks != nil {
				// A task created at one instance would not verify at the
				// next: every tasks/get would be refused.
				return fmt.Errorf("gateway: a gateway with a tasks table (%s) on Lambda needs %s: its task records are sealed with a key every instance shares", taskstore.EnvTable, EnvSessionKeySecret)
			}
			g.cfg.Logger.Warn("mcpfn gateway: no " + EnvSessionKeySecret + ": the session ids this instance mints do not verify at other instances, where a legacy client's cancel misses its call")
		}
		return nil
	}
	api, err := clients.secrets()
	if err != nil {
		return err
	}
	secrets, err := readGatewaySecret(ctx, api, g.cfg.SessionKeySecret)
	if err != nil {
		return err
	}
	if g.sessions, err = sessionKeysOf(secrets); err != nil {
		return fmt.Errorf("gateway: session key secret %s: %w", g.cfg.SessionKeySecret, err)
	}
	if g.records, err = recordKeysOf(secrets); err != nil {
		return fmt.Errorf("gateway: session key secret %s: %w", g.cfg.SessionKeySecret, err)
	}
	return nil
}

// newSessionKey derives the MAC key from a secret's value.
func newSessionKey(secret []byte) ([]byte, error) {
	if len(secret) < calltoken.MinSecretBytes {
		return nil, fmt.Errorf("a session key secret must be at least %d bytes, got %d", calltoken.MinSecretBytes, len(secret))
	}
	return hkdf.Key(sha256.New, secret, nil, "mcpfn session id v1", 32)
}

// readSessionKeys reads the secret's current version (which mints) and its
// previous one (which still verifies), once, at cold start.
func readSessionKeys(ctx context.Context, api calltoken.SecretsAPI, secretID string) (sessionKeys, error) {
	secrets, err := readGatewaySecret(ctx, api, secretID)
	if err != nil {
		return nil, err
	}
	keys, err := sessionKeysOf(secrets)
	if err != nil {
		return nil, fmt.Errorf("gateway: session key secret %s: %w", secretID, err)
	}
	return keys, nil
}

// sessionKeysOf derives the session keys of the gateway secret's versions
// (current first); a previous version too short to use is skipped.
func sessionKeysOf(secrets [][]byte) (sessionKeys, error) {
	key, err := newSessionKey(secrets[0])
	if err != nil {
		return nil, err
	}
	keys := sessionKeys{key}
	for _, prev := range secrets[1:] {
		if k, err := newSessionKey(prev); err == nil {
			keys = append(keys, k)
		}
	}
	return keys, nil
}

// readGatewaySecret reads the gateway's own secret (GatewaySessionKey): its
// current version, then its previous one when there is one.
func readGatewaySecret(ctx context.Context, api calltoken.SecretsAPI, secretID string) ([][]byte, error) {
	read := func(stage string) ([]byte, error) {
		out, err := api.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(secretID), VersionStage: aws.String(stage)})
		if err != nil {
			return nil, err
		}
		if out.SecretString != nil {
			return []byte(*out.SecretString), nil
		}
		return out.SecretBinary, nil
	}
	// Both versions at once: the cold start waits for one round trip.
	var prev []byte
	var prevErr error
	var wg sync.WaitGroup
	wg.Go(func() { prev, prevErr = read("AWSPREVIOUS") })
	cur, err := read("AWSCURRENT")
	wg.Wait()
	if err != nil {
		return nil, fmt.Errorf("gateway: reading the session key secret %s: %w", secretID, err)
	}
	secrets := [][]byte{cur}
	var notFound *types.ResourceNotFoundException
	switch err := prevErr; {
	case errors.As(err, &notFound):
	case err != nil:
		return nil, fmt.Errorf("gateway: reading the previous version of the session key secret %s: %w", secretID, err)
	default:
		secrets = append(secrets, prev)
	}
	return secrets, nil
}

// randomSessionKeys is a key of this process only: without a configured
// secret, the session ids one gateway instance mints mean nothing to
// another (there, their requests fall back to the owner + id key).
func randomSessionKeys() sessionKeys {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return sessionKeys{k}
}

func sessionMAC(key []byte, owner, nonce string) []byte {
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "%d:%s|%s", len(owner), owner, nonce)
	return m.Sum(nil)[:sessionMACBytes]
}

// mint returns a new session id of owner: visible ASCII as the transport
// requires, unguessable, bound to owner.
func (ks sessionKeys) mint(owner string) string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	nonce := base64.RawURLEncoding.EncodeToString(b)
	return sessionPrefix + nonce + "." + base64.RawURLEncoding.EncodeToString(sessionMAC(ks[0], owner, nonce))
}

// verified returns id when the gateway minted it for owner, else "".
func (ks sessionKeys) verified(owner, id string) string {
	rest, ok := strings.CutPrefix(id, sessionPrefix)
	if !ok {
		return ""
	}
	nonce, mac, ok := strings.Cut(rest, ".")
	got, err := base64.RawURLEncoding.DecodeString(mac)
	if !ok || nonce == "" || err != nil || len(got) != sessionMACBytes {
		return ""
	}
	for _, k := range ks {
		if hmac.Equal(got, sessionMAC(k, owner, nonce)) {
			return id
		}
	}
	return ""
}

// legacySession is the verified session of a request of the
// initialize-era protocol versions, "" for a 2026-07-28 request (which has
// no sessions: the header is ignored) or an id that does not verify.
func (g *Gateway) legacySession(r *http.Request, owner string) string {
	if r.Header.Get("Mcp-Protocol-Version") >= wire.ModernProtocolVersion {
		return ""
	}
	return g.sessions.verified(owner, r.Header.Get("Mcp-Session-Id"))
}

// sessionWriter adds a new session id to a successful initialize answer.
type sessionWriter struct {
	http.ResponseWriter
	id    string
	wrote bool
}

func (s *sessionWriter) WriteHeader(status int) {
	if !s.wrote {
		s.wrote = true
		if status == http.StatusOK {
			s.Header().Set("Mcp-Session-Id", s.id)
		}
	}
	s.ResponseWriter.WriteHeader(status)
}

func (s *sessionWriter) Write(p []byte) (int, error) {
	if !s.wrote {
		s.WriteHeader(http.StatusOK)
	}
	return s.ResponseWriter.Write(p)
}

func (s *sessionWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
