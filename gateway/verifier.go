package gateway

import (
	"context"
	"errors"
	"log/slog"

	"github.com/mcpfn/mcpfn/adapter"
)

// JWTVerifier is the gateway's bearer-JWT check — signature against the
// issuer's JWKS, issuer, audience, expiry, a subject — for another front door
// that must verify the same tokens the same way (the AgentCore request
// interceptor, package agentcore). The identity it returns is built exactly
// as the gateway builds a JWT caller's.
type JWTVerifier struct{ a *jwtAuth }

// NewJWTVerifier starts the JWKS cache for cfg (defaults as in [Config]).
func NewJWTVerifier(ctx context.Context, cfg JWTConfig, logger *slog.Logger) (*JWTVerifier, error) {
	if cfg.Issuer == "" || cfg.Audience == "" {
		return nil, errors.New("gateway: a JWT verifier needs " + EnvJWTIssuer + " and " + EnvJWTAudience)
	}
	if logger == nil {
		logger = slog.Default()
	}
	a, err := newJWTAuth(ctx, cfg.withDefaults(), "", "", nil, logger)
	if err != nil {
		return nil, err
	}
	return &JWTVerifier{a: a}, nil
}

// Verify checks a bearer token and returns the caller it names. Its errors
// wrap go-sdk's auth.ErrInvalidToken.
func (v *JWTVerifier) Verify(ctx context.Context, token string) (*adapter.Identity, error) {
	ti, err := v.a.verify(ctx, token, nil)
	if err != nil {
		return nil, err
	}
	id, _ := ti.Extra[identityExtraKey].(*adapter.Identity)
	if id == nil {
		return nil, errors.New("gateway: the verified token yielded no identity")
	}
	return id.Clone(), nil
}

// AuthorizeTool returns why id may not call t (UNAUTHORIZED without a
// caller, FORBIDDEN with missing scopes), or nil: the gateway's own check
// before any invoke, for other front doors.
func AuthorizeTool(t *adapter.Tool, id *adapter.Identity) *adapter.Error {
	return authorizeTool(t, id, "")
}
