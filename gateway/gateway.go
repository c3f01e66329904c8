package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/calltoken"
	"github.com/mcpfn/mcpfn/claimcheck"
	"github.com/mcpfn/mcpfn/mcptool"
	"github.com/mcpfn/mcpfn/taskstore"
	"github.com/mcpfn/mcpfn/wire"
)

// Gateway is the hosted MCP endpoint, an http.Handler. Build it once (at cold
// start) with [New]; it is safe for concurrent requests.
type Gateway struct {
	cfg     Config
	server  *mcp.Server
	mcp     http.Handler
	mcpSSE  http.Handler // the same server answering on SSE streams (stream.go)
	auth    authenticator
	jwt     *jwtAuth // nil unless AuthJWT: serves RFC 9728 metadata
	invoker Invoker
	hosts   map[string]bool
	origins *http.CrossOriginProtection
	allowed map[string]bool // AllowedOrigins, for CORS response headers
	signer  *calltoken.Signer
	tools   map[string]*adapter.Tool
	// firstAnswer is Config.FirstAnswer, called once.
	firstAnswer func()
	invokes     slots // MaxInvokes: Invokes in flight in the process
	// unsentRetryer retries a destructive tool's Invoke only when the
	// function cannot have run (decision 0015).
	unsentRetryer aws.Retryer
	stop          context.CancelFunc
	// tasks is the tasks table (Config.Tasks): nil serves no tasks.
	tasks *taskstore.Store
	now   func() time.Time // the clock of task run windows; tests move it
	// sessions mint and verify legacy clients' session ids (session.go).
	sessions sessionKeys
	// records seal and verify task records (records.go).
	records taskstore.RecordKeys
	// payloads is the claim check's bucket (claimcheck.go); nil: none.
	payloads *claimcheck.Store
	// maxBody is the largest body any request may have (largestBody).
	maxBody int64
}

// requestInfo is what the HTTP front learned about one JSON-RPC message that
// the MCP server cannot tell a tool handler. It travels in the context the
// go-sdk derives every handler context from; each message of a batch gets
// its own.
type requestInfo struct {
	identity  *adapter.Identity // verified, or nil
	sessionID string            // the Mcp-Session-Id header: caller data
	trace     wire.Trace        // the gateway's own trace position
	// callerXRay: the caller sent an X-Amzn-Trace-Id header, whose trace
	// wins over a W3C traceparent (callTrace).
	callerXRay bool
	// traceparent is the request's W3C traceparent header, as sent.
	traceparent string
	deadline    time.Time       // the gateway's deadline (Lambda's), zero locally
	jsonrpcID   json.RawMessage // the id of this message
	method      string          // the method of this message
	invokes     slots           // MaxInvokesPerRequest, shared by a batch's messages
	// declaresTasks: a tools/call whose _meta declares the tasks
	// extension; created is its CreateTaskResult once it became a task.
	declaresTasks bool
	created       *taskstore.View
	// checked: the go-sdk accepted a tasks/* request (its protocol
	// version and header checks) and called the gateway's handler.
	checked bool
	// sse: the message is answered on an SSE stream that relays the
	// call's progress and log frames (stream.go).
	sse bool
	// session is the Mcp-Session-Id of a legacy request when the gateway
	// minted it for this caller (session.go), else "": it scopes the
	// request's cancel marker.
	session string
	// errorStatus decides the HTTP status of a JSON-RPC error answering
	// the message (rpcstatus.go).
	errorStatus errorStatus
}

type requestInfoKey struct{}

// New checks cfg, builds the MCP server with one forwarding tool per catalog
// entry and, unless cfg.Lambda is set, a Lambda client from the default AWS
// configuration.
func New(cfg Config) (*Gateway, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(context.Background())
	g := &Gateway{cfg: cfg, invoker: cfg.Lambda, signer: cfg.Signer, tools: map[string]*adapter.Tool{}, stop: stop,
		invokes: newSlots(cfg.MaxInvokes), unsentRetryer: invokeRetryer(cfg.InvokeAttempts, true),
		tasks: cfg.Tasks, now: time.Now}
	for _, t := range cfg.Tools {
		g.tools[t.Name()] = t
	}
	// The cold start's reads — the call keys, the session key, the
	// issuer's key set — need nothing of each other: made at once, the
	// cold start waits for the slowest of them, not for their sum.
	var (
		wg                            sync.WaitGroup
		signerErr, sessionErr, jwtErr error
		jwtA                          *jwtAuth
	)
	clients := newAWSClients(ctx, &cfg)
	if g.signer == nil {
		wg.Go(func() { signerErr = g.loadSigner(ctx, clients) })
	}
	wg.Go(func() { sessionErr = g.loadSessionKeys(ctx, clients) })
	if cfg.Auth == AuthJWT {
		var scopes []string
		for _, t := range cfg.Tools {
			for _, s := range t.Scopes() {
				if !slices.Contains(scopes, s) {
					scopes = append(scopes, s)
				}
			}
		}
		wg.Go(func() { jwtA, jwtErr = newJWTAuth(ctx, cfg.JWT, cfg.ResourceURL, cfg.Path, scopes, cfg.Logger) })
	}
	wg.Wait()
	if err := errors.Join(signerErr, sessionErr, jwtErr); err != nil {
		stop()
		return nil, err
	}
	if g.tasks != nil {
		// Every record the gateway reads must verify; every task it
		// creates is sealed (records.go).
		g.tasks = g.tasks.Sealed(g.records)
	}
	if cfg.PayloadsBucket != "" {
		client := cfg.Payloads
		if client == nil {
			awsCfg, err := clients.config()
			if err != nil {
				stop()
				return nil, err
			}
			client = claimcheck.NewClient(awsCfg, os.Getenv)
		}
		g.payloads = claimcheck.FromClient(cfg.PayloadsBucket, client)
	}
	g.maxBody = g.largestBody()
	if cfg.FirstAnswer != nil {
		g.firstAnswer = sync.OnceFunc(cfg.FirstAnswer)
	}
	if g.invoker == nil {
		awsCfg, err := clients.config()
		if err != nil {
			stop()
			return nil, err
		}
		awsCfg = awsCfg.Copy()
		awsCfg.Retryer = func() aws.Retryer { return invokeRetryer(cfg.InvokeAttempts, false) }
		g.invoker = lambda.NewFromConfig(awsCfg)
	}

	switch cfg.Auth {
	case AuthNone:
		g.auth = noAuth{}
	case AuthIAM:
		g.auth = iamAuth{scopes: cfg.IAMScopes, sessionSubjects: cfg.IAMSessionSubjects}
	case AuthJWT:
		g.auth, g.jwt = jwtA, jwtA
	}

	if len(cfg.AllowedHosts) > 0 {
		g.hosts = make(map[string]bool)
		for _, h := range cfg.AllowedHosts {
			g.hosts[strings.ToLower(h)] = true
		}
	}
	g.origins = http.NewCrossOriginProtection()
	g.allowed = make(map[string]bool)
	for _, o := range cfg.AllowedOrigins {
		if err := g.origins.AddTrustedOrigin(o); err != nil {
			stop()
			return nil, fmt.Errorf("gateway: %s: %w", EnvAllowedOrigins, err)
		}
		g.allowed[o] = true
	}

	// The SDK logs every ephemeral session at INFO: one line per request.
	sdkLogger := slog.New(minLevel{cfg.Logger.Handler(), slog.LevelWarn})
	caps := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}
	if g.tasks != nil {
		caps.AddExtension(TasksExtension, nil)
	}
	g.server = mcp.NewServer(&mcp.Implementation{Name: cfg.ServerName, Version: cfg.ServerVersion}, &mcp.ServerOptions{
		Capabilities: caps,
		Logger:       sdkLogger,
	})
	g.server.AddReceivingMiddleware(g.filterToolsList)
	if g.tasks != nil {
		if err := g.addTaskMethods(); err != nil {
			stop()
			return nil, err
		}
	}
	for _, t := range cfg.Tools {
		mt, err := mcptool.Of(t)
		if err != nil {
			stop()
			return nil, err
		}
		// The raw handler: the gateway neither decodes nor validates the
		// arguments; the function validates them against the same schema.
		g.server.AddTool(mt, g.forwarder(t, cfg.Functions[t.Name()]))
	}
	opts := mcp.StreamableHTTPOptions{
		Stateless:    true,
		JSONResponse: true,
		// An explicit Host allow-list replaces the SDK's loopback-only
		// check (which would refuse a Function URL's Host locally).
		DisableLocalhostProtection: len(cfg.AllowedHosts) > 0,
		// Past MaxBodyBytes only a call of a tool that declared large
		// arguments is read (serveMCP checks which).
		MaxRequestBodyBytes:          g.maxBody,
		Logger:                       sdkLogger,
		PropagateRequestCancellation: true,
	}
	g.mcp = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return g.server }, &opts)
	g.mcpSSE = g.sseHandler(opts)
	return g, nil
}

// minLevel drops records below min.
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (m minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= m.min && m.Handler.Enabled(ctx, l)
}
func (m minLevel) WithAttrs(a []slog.Attr) slog.Handler {
	return minLevel{m.Handler.WithAttrs(a), m.min}
}
func (m minLevel) WithGroup(n string) slog.Handler { return minLevel{m.Handler.WithGroup(n), m.min} }

// Close stops the gateway's background work (the JWKS refresh).
func (g *Gateway) Close() error {
	g.stop()
	return nil
}

// Server returns the MCP server (for inspection; do not add tools to it).
func (g *Gateway) Server() *mcp.Server { return g.server }

// ServeHTTP checks the request in the order that leaks least and costs least
// (host, path, origin, method, media type, declared size, authentication,
// body size) and hands it to the go-sdk streamable handler, one message at a
// time.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if g.hosts != nil && !g.hostAllowed(r.Host) {
		http.Error(w, fmt.Sprintf("Forbidden: host %q is not served here", r.Host), http.StatusForbidden)
		return
	}
	// RFC 9728 metadata lives at the well-known prefix plus the resource's
	// path, whatever prefix (an API stage) the resource URL carries.
	if g.jwt != nil && (r.URL.Path == wellKnownPRM || strings.HasPrefix(r.URL.Path, wellKnownPRM+"/")) {
		g.jwt.serveMetadata(w, r)
		return
	}
	if r.URL.Path != g.cfg.Path {
		http.NotFound(w, r)
		return
	}
	if err := g.origins.Check(r); err != nil {
		http.Error(w, "Forbidden: cross-origin request from an origin not in "+EnvAllowedOrigins, http.StatusForbidden)
		return
	}
	if o := r.Header.Get("Origin"); o != "" && g.allowed[o] {
		w.Header().Set("Access-Control-Allow-Origin", o)
		w.Header().Add("Vary", "Origin")
		if r.Method == http.MethodOptions {
			w.Header().Set("Access-Control-Allow-Methods", "POST")
			w.Header().Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Accept, Mcp-Protocol-Version, Mcp-Session-Id, Mcp-Method, Mcp-Name, X-Amzn-Trace-Id, Traceparent")
			w.Header().Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Access-Control-Expose-Headers", "WWW-Authenticate, Mcp-Session-Id")
	}
	// Stateless: there is no SSE stream to GET and no session to DELETE.
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "Method Not Allowed: this stateless MCP endpoint accepts POST only", http.StatusMethodNotAllowed)
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		http.Error(w, "Unsupported Media Type: Content-Type must be application/json", http.StatusUnsupportedMediaType)
		return
	}
	if r.ContentLength > g.maxBody {
		http.Error(w, fmt.Sprintf("request body exceeds %d bytes", g.maxBody), http.StatusRequestEntityTooLarge)
		return
	}
	g.auth.authenticate(w, r, func(r *http.Request, id *adapter.Identity) { g.serveMCP(w, r, id) })
}

func (g *Gateway) hostAllowed(host string) bool {
	host = strings.ToLower(host)
	if g.hosts[host] {
		return true
	}
	// "example.com" allows "example.com:443" too.
	if i := strings.LastIndexByte(host, ':'); i > 0 && !strings.HasSuffix(host, "]") {
		return g.hosts[host[:i]]
	}
	return false
}

// serveMCP reads the (authenticated) body and dispatches it.
func (g *Gateway) serveMCP(w http.ResponseWriter, r *http.Request, id *adapter.Identity) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, g.maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			limit := mbe.Limit
			if limit > g.cfg.MaxBodyBytes {
				limit = g.cfg.MaxBodyBytes // what a request that declares nothing may send
			}
			http.Error(w, fmt.Sprintf("request body exceeds %d bytes", limit), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "failed to read body", http.StatusBadRequest)
		return
	}
	if ok, limit := g.allowedBody(body, int64(len(body))); !ok {
		// Large bodies are for the tools that declared large arguments
		// (ToolDef.MaxArgumentBytes); every other request keeps the bound.
		http.Error(w, fmt.Sprintf("request body exceeds %d bytes", limit), http.StatusRequestEntityTooLarge)
		return
	}
	if !utf8.Valid(body) {
		// JSON text is UTF-8 (RFC 8259 §8.1). The go-sdk would pass the
		// bytes through into the arguments, and the function, which
		// refuses them, could not even read the envelope they came in.
		writeRPCError(w, http.StatusBadRequest, nil, wire.RPCParseError, "the request body is not valid UTF-8")
		return
	}
	ri := &requestInfo{
		identity:  id,
		sessionID: r.Header.Get("Mcp-Session-Id"),
		trace:     gatewayTrace(r),
		invokes:   newSlots(g.cfg.MaxInvokesPerRequest),
		// A caller's header that gatewayTrace refused is no X-Ray context.
		callerXRay:  callerTraced(r),
		traceparent: r.Header.Get("Traceparent"),
		session:     g.legacySession(r, ownerOf(id)),
	}
	if d, ok := r.Context().Deadline(); ok {
		ri.deadline = d
	}
	if isArray(body) {
		g.serveBatch(w, r, body, ri)
		return
	}
	ri.jsonrpcID, ri.method = peekMessage(body)
	g.dispatch(w, r, body, ri)
}

// dispatch hands one JSON-RPC message to the go-sdk handler.
func (g *Gateway) dispatch(w http.ResponseWriter, r *http.Request, msg []byte, ri *requestInfo) {
	if isArray(msg) {
		// The go-sdk would run it as a batch of its own, past every limit
		// serveBatch enforces. serveBatch never passes one; this is the
		// backstop.
		writeRPCError(w, http.StatusBadRequest, nil, wire.RPCInvalidRequest, "a JSON-RPC batch cannot be nested in a batch")
		return
	}
	_, batched := w.(*bufferedResponse)
	if ri.method == "tools/call" && g.firstAnswer != nil {
		defer g.firstAnswer() // after sw.finish: the answer is written
	}
	// Every JSON-RPC error answering this message goes out on the status of
	// its revision's table (rpcstatus.go), the go-sdk's included.
	ri.errorStatus = errorStatusOf(r.Header, msg)
	sw := newStatusWriter(w, ri.errorStatus, ri.jsonrpcID)
	defer sw.finish()
	w = sw
	if ri.method == "subscriptions/listen" {
		// A listen stream never ends, and a buffered Lambda response is
		// delivered only when it does: the call would hold the gateway until
		// its timeout. The tool list is static, so there is nothing to hear.
		writeRPCErrorFor(w, ri.errorStatus, &wire.RPCError{Code: wire.RPCMethodNotFound,
			Message: "subscriptions/listen is not served: this gateway sends no notifications (its tool list is static)"}, ri.jsonrpcID)
		return
	}
	r = r.WithContext(context.WithValue(r.Context(), requestInfoKey{}, ri))
	r.Body = io.NopCloser(bytes.NewReader(msg))
	r.ContentLength = int64(len(msg))
	if g.tasks != nil && g.serveTasks(w, r, msg, ri) {
		return
	}
	h := g.mcp
	if !batched && g.wantsStream(ri, msg) {
		h, ri.sse = g.mcpSSE, true
	}
	if ri.method == "initialize" && !batched && r.Header.Get("Mcp-Protocol-Version") < wire.ModernProtocolVersion {
		// A session of the initialize era (session.go); 2026-07-28 has none.
		w = &sessionWriter{ResponseWriter: w, id: g.sessions.mint(ownerOf(ri.identity))}
	}
	h.ServeHTTP(w, r)
}

// isArray reports whether msg, after JSON whitespace, starts an array.
func isArray(msg []byte) bool {
	t := bytes.TrimLeft(msg, " \t\r\n")
	return len(t) > 0 && t[0] == '['
}

// isObject reports whether msg, after JSON whitespace, starts an object.
func isObject(msg []byte) bool {
	t := bytes.TrimLeft(msg, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

// messageID returns the "id" of a JSON-RPC message, nil when it has none.
func messageID(msg []byte) json.RawMessage {
	id, _ := peekMessage(msg)
	return id
}

// peekMessage reads the id and method of a JSON-RPC message; a malformed one
// yields zero values and is left to the SDK to reject.
func peekMessage(msg []byte) (json.RawMessage, string) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(msg, &m) != nil || string(m.ID) == "null" {
		return nil, m.Method
	}
	return m.ID, m.Method
}

// serveBatch answers a 2025-03-26 JSON-RPC batch by dispatching each message
// as its own request, concurrently, and assembling the responses in order
// (docs/decisions/0005). Each message gets its own JSON-RPC id, its own
// call id and its own invocation; they share only the verified identity and
// the request's headers.
func (g *Gateway) serveBatch(w http.ResponseWriter, r *http.Request, body []byte, ri *requestInfo) {
	// Batching was removed from the protocol in 2025-06-18.
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" && v >= "2025-06-18" {
		writeRPCError(w, http.StatusBadRequest, nil, wire.RPCInvalidRequest,
			fmt.Sprintf("JSON-RPC batches are not part of protocol version %s (only 2025-03-26 and earlier)", v))
		return
	}
	var msgs []json.RawMessage
	if err := json.Unmarshal(body, &msgs); err != nil {
		writeRPCError(w, http.StatusBadRequest, nil, wire.RPCParseError, "malformed JSON-RPC batch: "+err.Error())
		return
	}
	if len(msgs) == 0 {
		writeRPCError(w, http.StatusBadRequest, nil, wire.RPCInvalidRequest, "empty JSON-RPC batch")
		return
	}
	if len(msgs) > g.cfg.MaxBatch {
		writeRPCError(w, http.StatusBadRequest, nil, wire.RPCInvalidRequest,
			fmt.Sprintf("JSON-RPC batch of %d messages exceeds the limit of %d", len(msgs), g.cfg.MaxBatch))
		return
	}
	outs := make([]*bufferedResponse, len(msgs))
	var wg sync.WaitGroup
	for i, m := range msgs {
		outs[i] = newBufferedResponse()
		if !isObject(m) {
			// JSON-RPC 2.0 §6: an element that is not a request object is
			// an Invalid Request, answered with id null. An array here is
			// a batch nested in the batch, which the go-sdk would run as
			// one, past MaxBatch (issue 10, H1).
			writeRPCError(outs[i], http.StatusBadRequest, nil, wire.RPCInvalidRequest,
				"a JSON-RPC batch element must be a request object")
			continue
		}
		wg.Go(func() {
			mri := *ri
			mri.jsonrpcID, mri.method = peekMessage(m)
			g.dispatch(outs[i], r, m, &mri)
		})
	}
	wg.Wait()

	var buf bytes.Buffer
	n := 0
	for i, o := range outs {
		part := o.message(messageID(msgs[i]))
		if part == nil {
			continue // a notification: no response
		}
		if n == 0 {
			buf.WriteByte('[')
		} else {
			buf.WriteByte(',')
		}
		buf.Write(part)
		n++
	}
	if n == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	buf.WriteByte(']')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache, no-transform")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
}

// bufferedResponse captures the go-sdk's answer to one message of a batch.
type bufferedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func newBufferedResponse() *bufferedResponse { return &bufferedResponse{header: make(http.Header)} }

func (b *bufferedResponse) Header() http.Header { return b.header }
func (b *bufferedResponse) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.body.Write(p)
}
func (b *bufferedResponse) WriteHeader(status int) {
	if b.status == 0 {
		b.status = status
	}
}
func (b *bufferedResponse) Flush() {}

// copyTo writes the captured answer to w.
func (b *bufferedResponse) copyTo(w http.ResponseWriter) {
	for k, vs := range b.header {
		w.Header()[k] = vs
	}
	if b.status != 0 {
		w.WriteHeader(b.status)
	}
	_, _ = w.Write(b.body.Bytes())
}

// message turns the captured answer into the batch element: the JSON-RPC
// response object as written, nothing for an accepted notification, or a
// JSON-RPC error carrying the plain-text rejection (a bad element fails
// alone, not the whole batch).
func (b *bufferedResponse) message(id json.RawMessage) []byte {
	body := bytes.TrimSpace(b.body.Bytes())
	if b.status == http.StatusAccepted || (b.status < 300 && len(body) == 0) {
		return nil
	}
	if mt, _, _ := mime.ParseMediaType(b.header.Get("Content-Type")); mt == "application/json" && len(body) > 0 && body[0] == '{' && json.Valid(body) {
		return body
	}
	return wire.RPCErrorJSON(id, wire.RPCInvalidRequest, string(body))
}

func writeRPCError(w http.ResponseWriter, status int, id json.RawMessage, code int, msg string) {
	b := wire.RPCErrorJSON(id, code, msg)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
