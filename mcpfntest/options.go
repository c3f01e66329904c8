package mcpfntest

import (
	"context"
	"time"

	"github.com/mcpfn/mcpfn/adapter"
)

// Option sets something of one call.
type Option func(*callOptions)

type callOptions struct {
	ctx        context.Context
	caller     *adapter.Identity // nil: anonymous
	tenant     string
	callID     string
	session    string
	trace      string
	meta       map[string]any
	progress   bool
	onProgress func(Progress)
	answer     func(key string, req adapter.InputRequest) any
	timeout    time.Duration
}

// As calls as a user verified by JWT, subject, holding these scopes and no
// others.
func As(subject string, scopes ...string) Option {
	return func(o *callOptions) {
		o.caller = &adapter.Identity{Subject: subject, AuthMethod: "jwt", ClientID: clientID, Issuer: issuer, Scopes: scopes}
	}
}

// AsIdentity calls as exactly this verified identity: an IAM caller, an
// issuer or client of the test's choosing, an IP address.
func AsIdentity(id adapter.Identity) Option {
	return func(o *callOptions) { o.caller = id.Clone() }
}

// Anonymous calls with no verified caller, as a gateway in auth mode none
// does: a tool that requires scopes answers UNAUTHORIZED.
func Anonymous() Option { return func(o *callOptions) { o.caller = nil } }

// Tenant sets the verified caller's tenant, which the call and its rows
// carry. A call with Anonymous has no caller to set it on and fails the
// test.
func Tenant(tenant string) Option { return func(o *callOptions) { o.tenant = tenant } }

// CallID sets the call id (default: a fresh one per call, as the gateway
// makes). Calling again with the same id is a retry of the same call: a
// destructive tool refuses to run it twice. A later round of a call that
// asks for input is a request of its own, with the id id/2, id/3, ….
func CallID(id string) Option { return func(o *callOptions) { o.callID = id } }

// Session sets the MCP session id the call carries: caller data, never
// identity.
func Session(id string) Option { return func(o *callOptions) { o.session = id } }

// Trace gives the invocation an X-Ray trace header, as Lambda gives it
// ("Root=1-…-…;Parent=…;Sampled=1"): the call's rows then name its Root as
// their trace and its Parent as their parent span.
func Trace(header string) Option { return func(o *callOptions) { o.trace = header } }

// Meta sets the call's _meta: for example the client's capabilities, or a
// W3C "traceparent", which is the rows' parent in a call without [Trace]
// and a link (LinkedTraceparent) in one with it.
func Meta(meta map[string]any) Option { return func(o *callOptions) { o.meta = meta } }

// OnProgress asks for progress, as a client that sends a progress token
// does: the function streams its answer, and each report the tool makes
// reaches sink (if not nil) while the call runs, on the goroutine that
// called; [Result.Progress] keeps them all. Without it, a tool's progress
// reports go nowhere, as they do for a client that sent no token.
func OnProgress(sink func(Progress)) Option {
	return func(o *callOptions) { o.progress, o.onProgress = true, sink }
}

// Answer answers the tool's input requests (adapter.RequireInput), as the
// client would: answer gets each request with its key, in key order, and
// returns the client's result for it, e.g. an elicitation's
// map[string]any{"action": "accept", "content": map[string]any{…}}. The
// call goes on, round after round, until the tool completes.
func Answer(answer func(key string, req adapter.InputRequest) any) Option {
	return func(o *callOptions) { o.answer = answer }
}

// Timeout sets the time from the invocation's start to its deadline, the
// function's timeout (default 10 s, as adapter.ToolDef's; 0 sets none,
// which Lambda never does); the call's context ends a reserve
// (adapter.WithReserve) before it. Inside a testing/synctest bubble the
// deadline is on the bubble's clock.
func Timeout(d time.Duration) Option { return func(o *callOptions) { o.timeout = d } }

// Context sets the invocation's parent context (default
// context.Background()). When ctx ends, the call ends as at its deadline
// (TIMEOUT): a test can end a call while it runs, from an [OnProgress] sink
// for instance.
func Context(ctx context.Context) Option { return func(o *callOptions) { o.ctx = ctx } }
