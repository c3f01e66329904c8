package adapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/mcpfn/mcpfn/calltoken"
	"maps"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Source names the invocation format a call arrived in.
type Source string

const (
	SourceEnvelope  Source = "envelope"  // from the mcpfn gateway
	SourceAgentCore Source = "agentcore" // an Amazon Bedrock AgentCore Gateway Lambda target
	SourceJSONRPC   Source = "jsonrpc"   // a JSON-RPC 2.0 request invoking the function directly
	SourceUnknown   Source = "unknown"   // a payload in none of the formats
)

// Era is the MCP protocol era of a request.
type Era string

const (
	// EraModern is 2026-07-28 and later: every request carries its protocol
	// version and client info in _meta.
	EraModern Era = "modern"
	// EraLegacy is the initialize-era versions (2024-11-05 … 2025-11-25).
	EraLegacy Era = "legacy"
	// EraUnknown is a call whose transport does not say (AgentCore Gateway
	// passes the arguments only).
	EraUnknown Era = ""
)

// ModernProtocolVersion is the first protocol version of the modern era.
const ModernProtocolVersion = "2026-07-28"

// EraOf classifies an MCP protocol version. Versions compare as dates.
func EraOf(protocolVersion string) Era {
	if protocolVersion == "" {
		return EraUnknown
	}
	if protocolVersion >= ModernProtocolVersion {
		return EraModern
	}
	return EraLegacy
}

// ClientInfo is the MCP client's self-reported name and version. It is
// attribution only: anyone can send any value, so it is never identity,
// authorization, tenant or a rate-limit key.
type ClientInfo struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version,omitempty"`
}

// MCPMeta is the typed MCP metadata of one call.
type MCPMeta struct {
	Era             Era
	Method          string // "tools/call" or "tools/list"
	Tool            string
	ProtocolVersion string
	ClientInfo      *ClientInfo
	ProgressToken   any
	JSONRPCID       json.RawMessage // the id the MCP client sent, where known
	// Round is 1 for a first call and 2 or more for a multi-round-trip retry
	// (a call that echoes requestState / inputResponses). Where the transport
	// says which round it is (envelope), that value is used.
	Round int
	// Outcome is the multi-round outcome of this call, set from the result:
	// "complete" or "input_required".
	Outcome string
	// Meta is the request's raw _meta, as sent.
	Meta map[string]any
}

// Identity is a verified caller. The adapter takes it only from a call
// token that verified (package calltoken); it is absent when the call carried
// none, and never synthesised.
type Identity = calltoken.Identity

// Trace is the call's place in an X-Ray trace.
type Trace struct {
	// Header is the X-Ray trace header as received, "" when there was none.
	Header string
	Root   string // Root=…
	Parent string // Parent=… ("" when the header names none)
	// Sampled is "1", "0" or "" (undecided).
	Sampled string
	// From says where the header came from: "lambda" (the invocation's
	// context), "envelope" (the caller's header, where Lambda gave none),
	// "traceparent" (a W3C traceparent in _meta, where there was no X-Ray
	// header; Header is then its X-Ray spelling) or "".
	From string
	// Link is a W3C traceparent found in _meta when the call had an X-Ray
	// parent: kept as a link, not as the parent.
	Link string
	// SpanID is this call's own span: the id of the X-Ray subsegment its
	// audit row names. Pass it downstream as the Parent of what the call
	// invokes.
	SpanID string
}

// The shapes of an X-Ray trace id and span (segment) id.
var (
	traceRootPattern = regexp.MustCompile(`^1-[0-9a-f]{8}-[0-9a-f]{24}$`)
	spanIDPattern    = regexp.MustCompile(`^[0-9a-f]{16}$`)
)

// ParseTraceHeader splits an X-Ray trace header ("Root=…;Parent=…;Sampled=1").
// It never invents a part the header lacks.
func ParseTraceHeader(h string) Trace {
	t := Trace{Header: h}
	for part := range strings.SplitSeq(h, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		switch k {
		case "Root":
			t.Root = v
		case "Parent":
			t.Parent = v
		case "Sampled":
			t.Sampled = v
		}
	}
	return t
}

// LambdaFacts are the execution facts of the invocation.
type LambdaFacts struct {
	RequestID       string
	FunctionARN     string
	FunctionName    string
	FunctionVersion string
	Deadline        time.Time // Lambda's own deadline (the call's context ends reserve earlier)
	ColdStart       bool
	TenantID        string // Lambda tenant isolation id, if any
}

// Call is the per-call context: rebuilt for every call from its invocation,
// never shared with another call. Hooks and the handler receive it; its
// dimensions are the only part they write. Safe for concurrent use by the
// goroutines of one call.
type Call struct {
	ID        string
	Source    Source
	Tool      string
	MCP       *MCPMeta  // nil for non-MCP calls
	Caller    *Identity // nil when no identity was verified; never synthesised
	SessionID string    // caller data, never identity: see SessionKey
	Tenant    string
	Trace     Trace
	Lambda    LambdaFacts
	StartedAt time.Time
	// Arguments are the call's arguments as JSON: as received, or as replaced
	// by BeforeToolCall.
	Arguments json.RawMessage

	// AgentCore holds the AgentCore Gateway facts for SourceAgentCore calls.
	AgentCore *AgentCoreFacts

	mu    sync.Mutex
	dims  map[string]string
	creds boundCredentials

	teardown teardownList

	// auditTrace is the trace id given an untraced call's pending row, so
	// its final row names the same trace; auditAttempt is the attempt id of
	// that pending row, which only this call's final row may complete. Both
	// are set by the audit hook and read under mu: a hook abandoned at the
	// deadline may still be running when the final row is built.
	auditTrace, auditAttempt string

	// received are the arguments as the call token bound them (before any
	// BeforeToolCall replaced them); multi-round state is bound to them too.
	received json.RawMessage
	// claimed is a caller the payload named without a token that verified:
	// recorded in the audit row as unverified, nothing else.
	claimed *Identity

	// Multi-round input (multiround.go).
	inputResponses map[string]json.RawMessage
	requestState   string
}

func (c *Call) setAuditIDs(trace, attempt string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.auditTrace, c.auditAttempt = trace, attempt
}

func (c *Call) auditIDs() (trace, attempt string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.auditTrace, c.auditAttempt
}

// SetDimension records key=value on this call (e.g. "entityId"). The audit
// row carries the call's dimensions; they never reach another call.
func (c *Call) SetDimension(key, value string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dims == nil {
		c.dims = make(map[string]string)
	}
	c.dims[key] = value
}

// Dimension returns the value recorded for key.
func (c *Call) Dimension(key string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.dims[key]
	return v, ok
}

// Dimensions returns a copy of the call's dimensions.
func (c *Call) Dimensions() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.dims)
}

// SessionKey composes the session id with the tenant and the verified
// principal, the only safe key for state kept per session: the session id
// alone is caller data, and anyone can send someone else's.
func (c *Call) SessionKey() string {
	subject := ""
	if c.Caller != nil {
		subject = c.Caller.Subject
	}
	return fmt.Sprintf("%q/%q/%q", c.Tenant, subject, c.SessionID)
}

type callKey struct{}

// CallFrom returns the Call of ctx, when ctx is (derived from) a call's context.
func CallFrom(ctx context.Context) (*Call, bool) {
	c, ok := ctx.Value(callKey{}).(*Call)
	return c, ok
}

// AgentCoreFacts are the AgentCore Gateway values of the client context.
type AgentCoreFacts struct {
	ToolName          string // as sent: "<target>___<tool>" or a bare name
	RequestID         string
	MCPMessageID      string
	GatewayID         string
	TargetID          string
	MessageVersion    string
	PropagatedHeaders map[string]string
}

// ---- credentials ----

// CredentialNeed declares a credential a tool needs.
type CredentialNeed struct {
	Name   string   // the key the tool reads it by
	Kind   string   // e.g. "oauth2", "api-key"
	Scopes []string // what the credential must allow
}

// Credential is a resolved credential. Secret never appears in audit rows or
// logs (the sanitizer redacts the key, and the type has no String with it).
type Credential struct {
	Name    string
	Kind    string
	Secret  string
	Expires time.Time
}

// String keeps the secret out of logs and %v.
func (c Credential) String() string { return fmt.Sprintf("Credential{%s %s}", c.Name, c.Kind) }

// CredentialProvider resolves credentials for a call. Attach one with
// [WithCredentials].
type CredentialProvider interface {
	Resolve(ctx context.Context, call *Call, need CredentialNeed) (*Credential, error)
}

// ErrNoCredentials is returned by every method of a call's credentials when no
// provider is attached.
var ErrNoCredentials = errors.New("adapter: no credential provider attached to this function; pass adapter.WithCredentials(provider) to adapter.Start or adapter.New")

type boundCredentials struct {
	provider CredentialProvider
	resolved map[string]*Credential
}

// HasCredentials reports whether a real credential provider is attached.
// Branch on it for an intentional no-credential mode instead of on an error.
func (c *Call) HasCredentials() bool { return c.creds.provider != nil }

// Credential returns the credential resolved for the tool's declared need
// name. It is present only when the tool declared the need and it resolved.
func (c *Call) Credential(name string) (*Credential, bool) {
	cr, ok := c.creds.resolved[name]
	return cr, ok
}

// ResolveCredential asks the attached provider for a credential the tool did
// not declare (a need known only at run time). With no provider attached it
// fails closed with ErrNoCredentials.
func (c *Call) ResolveCredential(ctx context.Context, need CredentialNeed) (*Credential, error) {
	if !c.HasCredentials() {
		return nil, ErrNoCredentials
	}
	return c.creds.provider.Resolve(ctx, c, need)
}

// ---- teardown ----

// TeardownScope says how long a cleanup waits.
type TeardownScope string

const (
	// TeardownCall runs when the call has finished, after AfterToolCall.
	TeardownCall TeardownScope = "call"
	// TeardownEnvironment runs when Lambda shuts the execution environment
	// down (SIGTERM); honoured only where the function receives SIGTERM.
	TeardownEnvironment TeardownScope = "environment"
)

type teardownList struct {
	scopes []TeardownScope
	env    *environmentTeardown
	mu     sync.Mutex
	call   []func()
}

// TeardownScopes reports which scopes this environment honours. An empty list
// means no cleanup registered here would ever run.
func (c *Call) TeardownScopes() []TeardownScope {
	return append([]TeardownScope(nil), c.teardown.scopes...)
}

// OnTeardown registers cleanup for scope. It errors, naming the scopes this
// environment honours, when scope is not among them: a cleanup that would
// never run is a promise the framework cannot keep.
func (c *Call) OnTeardown(scope TeardownScope, cleanup func()) error {
	if !containsScope(c.teardown.scopes, scope) {
		return fmt.Errorf("adapter: teardown scope %q is not honoured here (honoured: %v)", scope, c.TeardownScopes())
	}
	switch scope {
	case TeardownCall:
		c.teardown.mu.Lock()
		c.teardown.call = append(c.teardown.call, cleanup)
		c.teardown.mu.Unlock()
	case TeardownEnvironment:
		c.teardown.env.add(cleanup)
	}
	return nil
}

func containsScope(s []TeardownScope, x TeardownScope) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// runCallTeardown runs call-scoped cleanups last-registered first.
func (c *Call) runCallTeardown(logf func(string, ...any)) {
	c.teardown.mu.Lock()
	fns := c.teardown.call
	c.teardown.call = nil
	c.teardown.mu.Unlock()
	for i := len(fns) - 1; i >= 0; i-- {
		func() {
			defer func() {
				if r := recover(); r != nil {
					logf("mcpfn: call teardown panicked: %v", r)
				}
			}()
			fns[i]()
		}()
	}
}

// environmentTeardown holds environment-scoped cleanups of one function.
type environmentTeardown struct {
	mu  sync.Mutex
	fns []func()
}

func (e *environmentTeardown) add(f func()) {
	e.mu.Lock()
	e.fns = append(e.fns, f)
	e.mu.Unlock()
}

// run runs and forgets the registered cleanups, last first.
func (e *environmentTeardown) run() {
	e.mu.Lock()
	fns := e.fns
	e.fns = nil
	e.mu.Unlock()
	for i := len(fns) - 1; i >= 0; i-- {
		func() {
			defer func() { _ = recover() }()
			fns[i]()
		}()
	}
}
