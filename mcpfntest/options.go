package mcpfntest

import (
	"time"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/calltoken"
)

// Option sets something of one call.
type Option func(*callOptions)

type callOptions struct {
	caller       *calltoken.Identity
	tenant       string
	callID       string
	session      string
	trace        string // the envelope's trace header (the caller's)
	lambdaTrace  string // the invocation's own X-Ray header
	lambdaTenant string
	meta         map[string]any
	progress     func(Progress)
	answer       func(key string, req adapter.InputRequest) (any, error)
	timeout      time.Duration
}

// As calls as a verified JWT user with these scopes (and only these).
func As(subject string, scopes ...string) Option {
	return func(o *callOptions) {
		o.caller = &calltoken.Identity{Subject: subject, AuthMethod: "jwt", ClientID: "mcpfntest", Issuer: "https://mcpfntest.invalid", Scopes: scopes}
	}
}

// AsIdentity calls as exactly this verified identity (an IAM caller, an
// issuer of the test's choosing, …).
func AsIdentity(id calltoken.Identity) Option {
	return func(o *callOptions) { c := id; o.caller = &c }
}

// Anonymous calls with no verified caller, as a gateway in auth mode none
// does: a tool that requires scopes answers UNAUTHORIZED.
func Anonymous() Option { return func(o *callOptions) { o.caller = nil } }

// Tenant sets the verified caller's tenant.
func Tenant(tenant string) Option { return func(o *callOptions) { o.tenant = tenant } }

// CallID sets the call id (default: a fresh one per call). Calling twice
// with one id is a retry of one call.
func CallID(id string) Option { return func(o *callOptions) { o.callID = id } }

// Session sets the MCP session id the call carries (caller data).
func Session(id string) Option { return func(o *callOptions) { o.session = id } }

// Trace gives the call an X-Ray trace header
// ("Root=1-…;Parent=…;Sampled=1"), as Lambda gives the invocation; the
// audit rows then name that trace and parent.
func Trace(header string) Option {
	return func(o *callOptions) { o.lambdaTrace, o.trace = header, header }
}

// Meta sets the call's _meta (e.g. a W3C "traceparent", kept as a link).
func Meta(meta map[string]any) Option { return func(o *callOptions) { o.meta = meta } }

// OnProgress asks for progress, as a client with a progress token does,
// and hands each report to sink as it arrives (Result.Progress keeps them).
func OnProgress(sink func(Progress)) Option {
	return func(o *callOptions) { o.progress = sink }
}

// Answer answers a tool's input requests (adapter.RequireInput): answer
// gets each request by its key and returns the client's response (e.g. an
// elicitation result {"action":"accept","content":{…}}); the call goes on
// round after round until the tool completes.
func Answer(answer func(key string, req adapter.InputRequest) (any, error)) Option {
	return func(o *callOptions) { o.answer = answer }
}

// Timeout sets the invocation's deadline (default 10 s, the default
// function timeout); the call's context ends a reserve before it.
func Timeout(d time.Duration) Option { return func(o *callOptions) { o.timeout = d } }
