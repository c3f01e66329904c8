package localtest

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcpfn/mcpfn/calltoken"
	"github.com/mcpfn/mcpfn/wire"
)

// keysFileName is where a running stack leaves what commands run beside it
// need to act as its issuer and its gateway: the issuer's signing key and
// every tool function's call key. Local keys only, generated at start and
// written with mode 0600 into the stack's own directory (gitignored); a
// deployed function's keys are in Secrets Manager and never on disk.
const keysFileName = "keys.json"

// LocalKeys are the keys of a running local stack.
type LocalKeys struct {
	Issuer    string               `json:"issuer"`
	KID       string               `json:"kid"`
	IssuerKey string               `json:"issuerKey"` // PKCS #8, PEM
	Audience  string               `json:"audience"`
	Scopes    []string             `json:"scopes"` // the READY token's: every scope the tools require
	Tools     map[string]LocalTool `json:"tools"`
	Written   time.Time            `json:"written"`
	key       *rsa.PrivateKey      // parsed IssuerKey
	rings     map[string]*calltoken.Keyring
}

// LocalTool is one tool function of the stack and its call key.
type LocalTool struct {
	Function string `json:"function"`
	Secret   string `json:"secret"`
}

// writeKeys leaves the stack's keys in Dir/keys.json.
func (s *Stack) writeKeys() error {
	der, err := x509.MarshalPKCS8PrivateKey(s.iss.key)
	if err != nil {
		return err
	}
	k := LocalKeys{
		Issuer: s.iss.url, KID: s.iss.kid, Audience: Audience, Scopes: s.scopes, Written: time.Now().UTC(),
		IssuerKey: string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		Tools:     map[string]LocalTool{},
	}
	for _, f := range s.functions {
		if f.spec.Tool == "" {
			continue
		}
		id := f.spec.Env[calltoken.EnvKeySecret]
		secret, ok := s.secrets.Current(id[strings.LastIndex(id, ":")+1:])
		if !ok {
			return fmt.Errorf("localtest: no call key for %s", f.spec.Name)
		}
		k.Tools[f.spec.Tool] = LocalTool{Function: f.spec.Name, Secret: secret}
	}
	b, err := json.MarshalIndent(k, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(s.dir, keysFileName), b, 0o600)
}

// LoadKeys reads the keys a stack running with Dir dir left there.
func LoadKeys(dir string) (*LocalKeys, error) {
	b, err := os.ReadFile(filepath.Join(dir, keysFileName))
	if err != nil {
		return nil, fmt.Errorf("localtest: %w (is `mcpfn local` running, with the same %s?)", err, EnvDir)
	}
	var k LocalKeys
	if err := json.Unmarshal(b, &k); err != nil {
		return nil, fmt.Errorf("localtest: %s: %w", keysFileName, err)
	}
	blk, _ := pem.Decode([]byte(k.IssuerKey))
	if blk == nil {
		return nil, errors.New("localtest: keys.json holds no issuer key")
	}
	pk, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("localtest: issuer key: %w", err)
	}
	rk, ok := pk.(*rsa.PrivateKey)
	if !ok {
		return nil, errors.New("localtest: the issuer key is not RSA")
	}
	k.key = rk
	k.rings = map[string]*calltoken.Keyring{}
	for tool, t := range k.Tools {
		if k.rings[tool], err = calltoken.KeyringFromSecrets([]byte(t.Secret)); err != nil {
			return nil, err
		}
	}
	return &k, nil
}

// MintToken is a bearer JWT from the stack's issuer for subject with scopes,
// as the demo user's token is made.
func (k *LocalKeys) MintToken(subject string, scopes []string) (string, error) {
	iss := &issuer{key: k.key, kid: k.KID, url: k.Issuer}
	claims := map[string]any{"sub": subject, "client_id": DemoClientID}
	if len(scopes) > 0 {
		claims["scope"] = strings.Join(scopes, " ")
	}
	return iss.mint(claims)
}

// SignEnvelope adds a fresh call token to an envelope, as the stack's
// gateway would sign it for caller, valid for ttl. The envelope's own
// "caller" (never identity) is dropped.
func (k *LocalKeys) SignEnvelope(payload []byte, caller *calltoken.Identity, ttl time.Duration) ([]byte, error) {
	var env wire.Envelope
	if err := json.Unmarshal(payload, &env); err != nil {
		return nil, fmt.Errorf("localtest: not an envelope: %w", err)
	}
	t, ok := k.Tools[env.Params.Name]
	if !ok {
		return nil, fmt.Errorf("localtest: the stack has no function for tool %q", env.Params.Name)
	}
	s := calltoken.NewSigner(calltoken.SignerGateway)
	s.Add(env.Params.Name, t.Function, k.rings[env.Params.Name], nil)
	c := calltoken.Call{Tool: env.Params.Name, CallID: env.CallID, Caller: caller, Args: env.Params.Arguments, Expires: time.Now().Add(ttl),
		InputResponses: env.Params.InputResponses, RequestState: env.Params.RequestState}
	if ref := env.Params.ArgumentsRef; ref != nil {
		// Stored arguments: the token binds the SHA-256 the reference names.
		sum, err := ref.Sum()
		if err != nil {
			return nil, fmt.Errorf("localtest: %w", err)
		}
		c.ArgsDigest = calltoken.DigestOfSHA256(sum)
	}
	tok, err := s.Sign(c)
	if err != nil {
		return nil, err
	}
	env.CallToken, env.ClaimedCaller = tok, nil
	return json.MarshalIndent(env, "", "  ")
}

// SignEvents writes a freshly signed copy of the event of every tool of the
// stack in eventsDir (events/<tool>.json) into outDir, for the local user
// with the READY token's scopes, valid for ttl. The committed events carry
// no token, so a function refuses them: signing is the only way in, and only
// with the keys of a stack you run.
func (k *LocalKeys) SignEvents(eventsDir, outDir string, ttl time.Duration) ([]string, error) {
	if err := os.MkdirAll(outDir, 0o700); err != nil {
		return nil, err
	}
	demo := &calltoken.Identity{Subject: DemoSubject, AuthMethod: "jwt", ClientID: DemoClientID, Issuer: k.Issuer, Scopes: k.Scopes}
	var written []string
	for _, tool := range sortedKeys(k.Tools) {
		in, err := os.ReadFile(filepath.Join(eventsDir, tool+".json"))
		if errors.Is(err, os.ErrNotExist) {
			continue // a test fixture's tool, without an event
		}
		if err != nil {
			return nil, err
		}
		out, err := k.SignEnvelope(in, demo, ttl)
		if err != nil {
			return nil, err
		}
		p := filepath.Join(outDir, tool+".json")
		if err := os.WriteFile(p, append(out, '\n'), 0o600); err != nil {
			return nil, err
		}
		written = append(written, p)
	}
	return written, nil
}
