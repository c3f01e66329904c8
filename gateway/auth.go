package gateway

import (
	"context"
	"crypto/ecdsa"
	"crypto/rsa"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/aws/aws-lambda-go/lambdaurl"
	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/mcpfn/mcpfn/adapter"
)

// authenticator verifies the caller of one HTTP request and continues with
// the verified identity (nil in AuthNone mode), or answers the request
// itself (401).
type authenticator interface {
	authenticate(w http.ResponseWriter, r *http.Request, next func(r *http.Request, id *adapter.Identity))
}

type noAuth struct{}

func (noAuth) authenticate(_ http.ResponseWriter, r *http.Request, next func(*http.Request, *adapter.Identity)) {
	next(r, nil)
}

// iamAuth reads the principal that Lambda's Function URL (AuthType AWS_IAM)
// verified. Only the event's request context is trusted: it is written by
// AWS, whereas any header could be written by the caller.
type iamAuth struct {
	scopes          []string
	sessionSubjects bool // Config.IAMSessionSubjects
}

// iamPrincipal is what the event's request context says of the signer.
type iamPrincipal struct{ AccountID, CallerID, UserARN, UserID string }

// principalOf reads the principal from the request context of the
// Function URL event the request came in (lambdaurl); a request that came
// in any other way has none.
func principalOf(ctx context.Context) (iamPrincipal, bool) {
	ev, ok := lambdaurl.RequestFromContext(ctx)
	if !ok {
		return iamPrincipal{}, false
	}
	if a := ev.RequestContext.Authorizer; a != nil && a.IAM != nil {
		return iamPrincipal{a.IAM.AccountID, a.IAM.CallerID, a.IAM.UserARN, a.IAM.UserID}, true
	}
	return iamPrincipal{}, false
}

func (a iamAuth) authenticate(w http.ResponseWriter, r *http.Request, next func(*http.Request, *adapter.Identity)) {
	iam, ok := principalOf(r.Context())
	if !ok {
		http.Error(w, "unauthorized: this gateway accepts IAM (SigV4) signed requests through its Function URL only", http.StatusUnauthorized)
		return
	}
	subject := iam.UserARN
	if subject == "" {
		subject = iam.CallerID
	}
	if subject == "" {
		http.Error(w, "unauthorized: the request context names no IAM principal", http.StatusUnauthorized)
		return
	}
	// An assumed role's session name is whatever the assumer typed
	// (sts:AssumeRole RoleSessionName): the role is who was authorised, the
	// session name is recorded beside it. The user id "ROLEID:session"
	// carries it too.
	clientID := iam.UserID
	role, session := splitAssumedRole(subject)
	if session != "" && !a.sessionSubjects {
		subject = role
		clientID, _, _ = strings.Cut(clientID, ":")
	}
	next(r, withClient(&adapter.Identity{
		Subject:     subject,
		AuthMethod:  "iam",
		ClientID:    clientID,
		RoleSession: session,
		Issuer:      "aws:iam",
		Scopes:      slices.Clone(a.scopes),
		// The AWS account is the natural tenant boundary of an IAM caller.
		Tenant: iam.AccountID,
	}, r))
}

// splitAssumedRole splits "arn:PARTITION:sts::ACCOUNT:assumed-role/NAME/SESSION"
// into the role part (without the session) and the session name. Any other
// ARN (an IAM user, root, a federated user) is returned whole.
func splitAssumedRole(arn string) (role, session string) {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "sts" {
		return arn, ""
	}
	rest, ok := strings.CutPrefix(parts[5], "assumed-role/")
	if !ok {
		return arn, ""
	}
	name, session, ok := strings.Cut(rest, "/")
	if !ok || name == "" || session == "" {
		return arn, ""
	}
	return strings.Join(parts[:5], ":") + ":assumed-role/" + name, session
}

// withClient adds the connection facts the audit row records. They describe
// the request, they never identify the caller.
func withClient(id *adapter.Identity, r *http.Request) *adapter.Identity {
	ip := r.RemoteAddr
	if h, _, err := net.SplitHostPort(ip); err == nil {
		ip = h
	}
	id.IP = ip
	id.UserAgent = r.UserAgent()
	return id
}

// identityExtraKey is where the JWT verifier leaves the identity in the
// go-sdk's auth.TokenInfo.
const identityExtraKey = "mcpfn/identity"

// jwtAuth verifies bearer JWTs with go-sdk's auth.RequireBearerToken (which
// writes the RFC 9728 WWW-Authenticate challenge) and golang-jwt, against
// keys from the issuer's JWKS (cached by jwkset, refreshed hourly and on an
// unknown kid, bounded by keyRefresher).
type jwtAuth struct {
	cfg       JWTConfig
	keys      jwkset.Storage
	refresher *keyRefresher
	parser    *jwt.Parser
	// claims checks what needs no key (issuer, audience, expiry, issued
	// at), before a token may cost a JWKS refresh.
	claims      *jwt.Validator
	methods     []string
	resourceURL string // fixed Config.ResourceURL, or "" to derive per request
	path        string
	scopes      []string // every scope the catalog's tools require
}

func newJWTAuth(ctx context.Context, cfg JWTConfig, resourceURL, path string, scopes []string, logger *slog.Logger) (*jwtAuth, error) {
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Second}
	}
	keys := jwkset.NewMemoryStorage()
	// Hourly refresh into keys, in the background.
	_, err := jwkset.NewStorageFromHTTP(cfg.JWKSURL, jwkset.HTTPClientStorageOptions{
		Client:      client,
		Ctx:         ctx,
		HTTPTimeout: 5 * time.Second,
		Storage:     keys,
		// A JWKS that is down at cold start must not keep the gateway from
		// starting: the first token with an unknown kid retries the fetch.
		NoErrorReturnFirstHTTPReq: true,
		RefreshInterval:           time.Hour,
		RefreshErrorHandler: func(ctx context.Context, err error) {
			logger.WarnContext(ctx, "mcpfn gateway: JWKS fetch failed", "url", cfg.JWKSURL, "error", err)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("gateway: JWKS %q: %w", cfg.JWKSURL, err)
	}
	refresher := &keyRefresher{every: cfg.KeyRefreshInterval, fetch: func(ctx context.Context) error {
		// Without RefreshInterval, jwkset fetches once, into keys, before
		// returning: a one-shot refresh through its public API.
		_, err := jwkset.NewStorageFromHTTP(cfg.JWKSURL, jwkset.HTTPClientStorageOptions{
			Client: client, Ctx: ctx, HTTPTimeout: 5 * time.Second, Storage: keys,
		})
		if err != nil {
			logger.WarnContext(ctx, "mcpfn gateway: JWKS fetch failed", "url", cfg.JWKSURL, "error", err)
		}
		return err
	}}
	methods := []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512"}
	claimOpts := []jwt.ParserOption{
		jwt.WithIssuer(cfg.Issuer),
		jwt.WithAudience(cfg.Audience),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(cfg.ClockSkew),
	}
	return &jwtAuth{
		cfg:         cfg,
		keys:        keys,
		refresher:   refresher,
		parser:      jwt.NewParser(append(claimOpts, jwt.WithValidMethods(methods))...),
		claims:      jwt.NewValidator(claimOpts...),
		methods:     methods,
		resourceURL: resourceURL,
		path:        path,
		scopes:      scopes,
	}, nil
}

func (a *jwtAuth) authenticate(w http.ResponseWriter, r *http.Request, next func(*http.Request, *adapter.Identity)) {
	mw := auth.RequireBearerToken(a.verify, &auth.RequireBearerTokenOptions{
		ResourceMetadataURL: metadataURL(a.resource(r)),
		ClockSkew:           a.cfg.ClockSkew,
	})
	mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ti := auth.TokenInfoFromContext(r.Context())
		id, _ := ti.Extra[identityExtraKey].(*adapter.Identity)
		if id == nil {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		// A copy per request: the connection facts differ per request.
		c := *id
		next(r, withClient(&c, r))
	})).ServeHTTP(w, r)
}

// verify is the go-sdk TokenVerifier. Every verification failure wraps
// auth.ErrInvalidToken, which the middleware answers with 401 and the
// challenge.
//
// The token is parsed once: the checks that need no key first (precheck),
// then the key looked up and the signature verified over the same parse —
// what jwt.Parser.ParseWithClaims does after its own parse, which the
// gateway used to run as a second parse of every request's token.
func (a *jwtAuth) verify(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	claims := jwt.MapClaims{}
	t, parts, err := a.parser.ParseUnverified(token, claims)
	if err == nil {
		err = a.precheck(t, claims)
	}
	if err == nil {
		err = a.verifySignature(ctx, t, parts)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
	}
	sub, _ := claims["sub"].(string)
	if sub == "" {
		return nil, fmt.Errorf("%w: token has no subject", auth.ErrInvalidToken)
	}
	exp, err := claims.GetExpirationTime()
	if err != nil || exp == nil {
		return nil, fmt.Errorf("%w: token has no expiry", auth.ErrInvalidToken)
	}
	id := &adapter.Identity{
		Subject:    sub,
		AuthMethod: "jwt",
		ClientID:   firstString(claims, "client_id", "azp"),
		Issuer:     a.cfg.Issuer,
		Scopes:     scopesOf(claims),
		Tenant:     firstString(claims, "tenant"),
	}
	return &auth.TokenInfo{
		Scopes:     id.Scopes,
		Expiration: exp.Time,
		UserID:     sub,
		Extra:      map[string]any{identityExtraKey: id},
	}, nil
}

// precheck runs every check that needs no key on a parsed token: its
// algorithm, a kid, issuer, audience and times (its shape was the parse's).
// Only a token that passes may look up (and so perhaps refresh) the
// issuer's keys.
func (a *jwtAuth) precheck(t *jwt.Token, claims jwt.MapClaims) error {
	if alg := t.Method.Alg(); !slices.Contains(a.methods, alg) {
		return fmt.Errorf("signing method %s is not accepted", alg)
	}
	if kid, _ := t.Header["kid"].(string); kid == "" || len(kid) > maxKIDLength {
		return errors.New("token header has no usable kid")
	}
	return a.claims.Validate(claims)
}

// verifySignature checks t's signature with the issuer's key for its kid:
// the header and claims segments as received, signed with the key the key
// set holds under that kid.
func (a *jwtAuth) verifySignature(ctx context.Context, t *jwt.Token, parts []string) error {
	key, err := a.keyFunc(ctx)(t)
	if err != nil {
		return err
	}
	if err := t.Method.Verify(parts[0]+"."+parts[1], t.Signature, key); err != nil {
		return fmt.Errorf("token signature is invalid: %w", err)
	}
	t.Valid = true
	return nil
}

// maxKIDLength bounds the kid looked up in the key set.
const maxKIDLength = 256

func (a *jwtAuth) keyFunc(ctx context.Context) jwt.Keyfunc {
	return func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		if kid == "" {
			return nil, errors.New("token header has no kid")
		}
		k, err := a.keys.KeyRead(ctx, kid)
		if errors.Is(err, jwkset.ErrKeyNotFound) && a.refresher.refresh(ctx) {
			k, err = a.keys.KeyRead(ctx, kid)
		}
		if err != nil {
			return nil, fmt.Errorf("signing key %q: %w", kid, err)
		}
		if alg := string(k.Marshal().ALG); alg != "" && alg != t.Method.Alg() {
			return nil, fmt.Errorf("key %q is for %s, token is signed with %s", kid, alg, t.Method.Alg())
		}
		switch key := k.Key().(type) {
		case *rsa.PublicKey, *ecdsa.PublicKey:
			return key, nil
		case *rsa.PrivateKey:
			return &key.PublicKey, nil
		case *ecdsa.PrivateKey:
			return &key.PublicKey, nil
		default:
			return nil, fmt.Errorf("key %q has unsupported type %T", kid, key)
		}
	}
}

// scopesOf reads "scope" (RFC 8693/9068: space separated) or "scp" (a list,
// or a space separated string, as some issuers send).
func scopesOf(c jwt.MapClaims) []string {
	for _, name := range []string{"scope", "scp"} {
		switch v := c[name].(type) {
		case string:
			if f := strings.Fields(v); len(f) > 0 {
				return f
			}
		case []any:
			var out []string
			for _, s := range v {
				if s, ok := s.(string); ok && s != "" {
					out = append(out, s)
				}
			}
			if len(out) > 0 {
				return out
			}
		}
	}
	return nil
}

func firstString(c jwt.MapClaims, names ...string) string {
	for _, n := range names {
		if s, ok := c[n].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

// resource is the RFC 9728 resource identifier: the configured public URL,
// or one derived from the request (its Host was checked against
// AllowedHosts before authentication runs).
func (a *jwtAuth) resource(r *http.Request) string {
	if a.resourceURL != "" {
		return a.resourceURL
	}
	scheme := "https"
	if host, _, err := net.SplitHostPort(r.Host); (err == nil && isLoopbackHost(host)) || isLoopbackHost(r.Host) {
		scheme = "http"
	}
	return scheme + "://" + r.Host + a.path
}

// metadataURL inserts the well-known segment between host and path, as RFC
// 9728 §3.1 specifies.
func metadataURL(resource string) string {
	u, err := url.Parse(resource)
	if err != nil {
		return ""
	}
	u.Path = wellKnownPRM + strings.TrimRight(u.Path, "/")
	u.RawQuery, u.Fragment = "", ""
	return u.String()
}

const wellKnownPRM = "/.well-known/oauth-protected-resource"

// serveMetadata answers RFC 9728 protected-resource metadata requests with
// go-sdk's handler.
func (a *jwtAuth) serveMetadata(w http.ResponseWriter, r *http.Request) {
	auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource:               a.resource(r),
		AuthorizationServers:   []string{a.cfg.Issuer},
		ScopesSupported:        a.scopes,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "mcpfn MCP gateway",
	}).ServeHTTP(w, r)
}

func isLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(h, "[]"))
	return ip != nil && ip.IsLoopback()
}
