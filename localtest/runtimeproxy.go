package localtest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// The Runtime API proxy stands between one emulator and its bootstrap: the
// bootstrap talks to it (its AWS_LAMBDA_RUNTIME_API), it forwards every
// request to the emulator's Runtime API unchanged and timestamps what an
// invocation consists of — the runtime's next returning the invoke, the
// runtime's response (or error) POST, and every extension's event/next
// after it, each extension saying it is done with the invoke.
//
// It exists because the emulator answers its caller only once the runtime
// and every extension subscribed to INVOKE have called next again (it
// buffers the response until then), whereas Lambda returns the response as
// soon as the runtime posts it and counts the time after as
// PostRuntimeExtensionsDuration. With the proxy the stack can do the same:
// answer the caller at the POST and keep the environment busy until the
// emulator answers (docs/local.md).
type runtimeProxy struct {
	ln  net.Listener
	srv *http.Server
	tr  *http.Transport
	rp  *httputil.ReverseProxy

	mu  sync.Mutex
	cur *invocation // the invoke in flight (an emulator serves one at a time)
	// subscribers is how many extensions of the current init subscribed to
	// INVOKE: an invoke ends when the runtime and each of them have called
	// next again. inited: the runtime has called next since (a new
	// registration then starts a new init's count).
	subscribers int
	inited      bool
	// registered are the extensions of the current init, by name
	// (Lambda-Extension-Name), in the order the emulator accepted them.
	registered []string
}

// Runtime API paths (https://docs.aws.amazon.com/lambda/latest/dg/runtimes-api.html,
// runtimes-extensions-api.html).
const (
	runtimeInvocationPrefix = "/2018-06-01/runtime/invocation/"
	runtimeNextPath         = runtimeInvocationPrefix + "next"
	extensionNextPath       = "/2020-01-01/extension/event/next"
	extensionRegisterPath   = "/2020-01-01/extension/register"
	// The response mode header of a streamed response, which the proxy
	// passes through without early release.
	responseModeHeader = "Lambda-Runtime-Function-Response-Mode"
)

// startRuntimeProxy listens on a free loopback port and forwards to the
// Runtime API at upstream (host:port).
func startRuntimeProxy(upstream string) (*runtimeProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	target := &url.URL{Scheme: "http", Host: upstream}
	p := &runtimeProxy{ln: ln}
	// No timeouts: next is a long poll that lasts as long as the
	// environment is idle. Never through an HTTP proxy of the environment.
	p.tr = &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4, DisableCompression: true}
	p.rp = &httputil.ReverseProxy{
		Rewrite:        func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport:      p.tr,
		FlushInterval:  -1,
		ModifyResponse: p.observe,
		// The emulator going away (killed, crashed) is an expected end of
		// every connection in flight: the runtime sees its Runtime API gone,
		// as it would without the proxy.
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) },
	}
	p.srv = &http.Server{Handler: p, ErrorLog: log.New(io.Discard, "", 0)}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// addr is the address the bootstrap is given as AWS_LAMBDA_RUNTIME_API.
func (p *runtimeProxy) addr() string { return p.ln.Addr().String() }

func (p *runtimeProxy) close() {
	_ = p.srv.Close()
	p.tr.CloseIdleConnections()
}

// extensions are the names of the extensions the current init registered
// (a process registers during its init, before the runtime's first next).
func (p *runtimeProxy) extensions() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.registered...)
}

// begin makes inv the invoke in flight; end forgets it.
func (p *runtimeProxy) begin(inv *invocation) {
	p.mu.Lock()
	p.cur = inv
	p.mu.Unlock()
}

func (p *runtimeProxy) end(inv *invocation) {
	p.mu.Lock()
	if p.cur == inv {
		p.cur = nil
	}
	p.mu.Unlock()
}

// current returns the invoke in flight if its request id is id ("" matches
// any).
func (p *runtimeProxy) current(id string) *invocation {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur == nil || (id != "" && p.cur.id != id) {
		return nil
	}
	return p.cur
}

func (p *runtimeProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	switch {
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, runtimeInvocationPrefix):
		id, kind := invocationPost(r.URL.Path)
		inv := p.current(id)
		if inv == nil {
			break
		}
		if kind == "response" && r.Header.Get(responseModeHeader) == "" {
			// Keep the payload: it is what the caller gets if the
			// emulator accepts it.
			body, err := bufferBody(r)
			if err != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			inv.post(now, kind, body)
		} else if kind != "" {
			inv.post(now, kind, nil)
		}
	case r.Method == http.MethodGet && r.URL.Path == runtimeNextPath:
		p.mu.Lock()
		p.inited = true
		n := p.subscribers
		p.mu.Unlock()
		if inv := p.current(""); inv != nil {
			inv.runtimeNextAgain(now, n)
		}
	case r.Method == http.MethodGet && r.URL.Path == extensionNextPath:
		p.mu.Lock()
		n := p.subscribers
		p.mu.Unlock()
		if inv := p.current(""); inv != nil {
			inv.extensionNext(now, n)
		}
	case r.Method == http.MethodPost && r.URL.Path == extensionRegisterPath:
		body, err := bufferBody(r)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		var reg struct{ Events []string }
		if json.Unmarshal(body, &reg) == nil && slices.Contains(reg.Events, "INVOKE") {
			r = r.WithContext(context.WithValue(r.Context(), invokeSubscriber{}, true))
		}
	}
	p.rp.ServeHTTP(w, r)
}

// bufferBody reads r's body and puts it back, to be forwarded as it was.
func bufferBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	return body, nil
}

// invokeSubscriber marks (in its context) a registration for INVOKE.
type invokeSubscriber struct{}

// observe sees the emulator's answers: the invoke the runtime's next
// returned, and whether the emulator accepted a response.
func (p *runtimeProxy) observe(resp *http.Response) error {
	r := resp.Request
	switch {
	case r.Method == http.MethodGet && r.URL.Path == runtimeNextPath && resp.StatusCode == http.StatusOK:
		if inv := p.current(resp.Header.Get("Lambda-Runtime-Aws-Request-Id")); inv != nil {
			inv.runtimeNextReturned(time.Now())
		}
	case r.Method == http.MethodGet && r.URL.Path == extensionNextPath && resp.StatusCode == http.StatusOK:
		// An event for an extension: while an invoke is in flight, its
		// INVOKE (a SHUTDOWN ends the environment).
		if inv := p.current(""); inv != nil {
			inv.extensionEvent(time.Now())
		}
	case r.Method == http.MethodPost && r.URL.Path == extensionRegisterPath && resp.StatusCode == http.StatusOK:
		p.mu.Lock()
		if p.inited {
			// Registration is only open during an init: this one is new
			// (the emulator starts a new bootstrap after a crash).
			p.subscribers, p.inited, p.registered = 0, false, nil
		}
		p.registered = append(p.registered, r.Header.Get("Lambda-Extension-Name"))
		if r.Context().Value(invokeSubscriber{}) != nil {
			p.subscribers++
		}
		p.mu.Unlock()
	case r.Method == http.MethodPost && resp.StatusCode == http.StatusAccepted:
		if id, kind := invocationPost(r.URL.Path); kind == "response" {
			if inv := p.current(id); inv != nil {
				inv.accept(time.Now())
			}
		}
	}
	return nil
}

// invocationPost splits ".../invocation/{id}/response|error" into the id
// and "response" or "error" ("" for any other path).
func invocationPost(path string) (id, kind string) {
	rest := strings.TrimPrefix(path, runtimeInvocationPrefix)
	id, kind, ok := strings.Cut(rest, "/")
	if !ok || (kind != "response" && kind != "error") {
		return "", ""
	}
	return id, kind
}

// invocation is one invoke sent to an emulator: what the Runtime API proxy
// saw of it, and the emulator's own answer.
type invocation struct {
	id   string
	sent time.Time

	mu          sync.Mutex
	nextAt      time.Time   // the runtime's next returned this invoke
	extEventAt  time.Time   // the first extension's next returned its INVOKE event
	postedAt    time.Time   // the runtime's response or error POST arrived
	postKind    string      // "response" or "error"
	response    []byte      // the /response payload (not a streamed one)
	acceptedAt  time.Time   // the emulator accepted the response
	extNext     []time.Time // extensions' event/next once the runtime had the invoke
	runtimeDone time.Time   // the runtime's next after the POST
	// endedAt: the runtime and every extension subscribed to INVOKE have
	// called next again — where Lambda ends the invoke; the emulator
	// answers a little later.
	endedAt     time.Time
	respondedCh chan struct{}
	// notify, if set, is called after the runtime or an extension called
	// next (the pool may then hand the environment on soon).
	notify func()

	// Set before finished is closed: the emulator's answer, or why there
	// was none.
	finished   chan struct{}
	status     int
	out        []byte
	err        error
	answeredAt time.Time
}

func newInvocation(id string) *invocation {
	return &invocation{id: id, respondedCh: make(chan struct{}), finished: make(chan struct{})}
}

func (inv *invocation) runtimeNextReturned(t time.Time) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if inv.nextAt.IsZero() {
		inv.nextAt = t
	}
}

func (inv *invocation) extensionEvent(t time.Time) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if inv.extEventAt.IsZero() {
		inv.extEventAt = t
	}
}

func (inv *invocation) post(t time.Time, kind string, body []byte) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if inv.postedAt.IsZero() {
		inv.postedAt, inv.postKind, inv.response = t, kind, body
	}
}

// accept records that the emulator took the response and releases the
// caller — unless the payload is larger than Lambda returns (the emulator
// turns that into an error answer, which the caller then waits for).
func (inv *invocation) accept(t time.Time) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if !inv.acceptedAt.IsZero() || inv.postKind != "response" || inv.response == nil || len(inv.response) > maxPayload {
		return
	}
	inv.acceptedAt = t
	close(inv.respondedCh)
}

// extensionNext records an extension's next: once the runtime has the
// invoke (every extension then has its INVOKE event too), an extension done
// with it. subscribers is the current count of INVOKE extensions.
func (inv *invocation) extensionNext(t time.Time, subscribers int) {
	inv.mu.Lock()
	if !inv.nextAt.IsZero() {
		inv.extNext = append(inv.extNext, t)
		inv.checkEnded(t, subscribers)
	}
	inv.mu.Unlock()
	if inv.notify != nil {
		inv.notify()
	}
}

// runtimeNextAgain records the runtime's next after its POST.
func (inv *invocation) runtimeNextAgain(t time.Time, subscribers int) {
	inv.mu.Lock()
	if !inv.postedAt.IsZero() && inv.runtimeDone.IsZero() {
		inv.runtimeDone = t
		inv.checkEnded(t, subscribers)
	}
	inv.mu.Unlock()
	if inv.notify != nil {
		inv.notify()
	}
}

func (inv *invocation) checkEnded(t time.Time, subscribers int) {
	if inv.endedAt.IsZero() && !inv.runtimeDone.IsZero() && len(inv.extNext) >= subscribers {
		inv.endedAt = t
	}
}

// settling reports whether the environment is about to be free: the
// invoke has ended (the runtime and every INVOKE extension called next
// again), or the emulator has answered, or the caller has the response and
// the runtime has not called next yet — which it does at once unless it
// died (then the emulator answers at once), or works after its response
// (mcpfn's audit writes its rows there, decision 0039: a few milliseconds
// that Lambda would count busy). Not while an extension still works after
// the response: that environment is busy, as on Lambda.
func (inv *invocation) settling() bool {
	select {
	case <-inv.finished:
		return true
	default:
	}
	inv.mu.Lock()
	defer inv.mu.Unlock()
	return !inv.endedAt.IsZero() || (!inv.acceptedAt.IsZero() && inv.runtimeDone.IsZero())
}

// responded is closed once the caller may have the runtime's response.
func (inv *invocation) responded() <-chan struct{} { return inv.respondedCh }

// early reports whether the runtime's response was accepted, so that the
// caller has (or may have) it before the emulator answered.
func (inv *invocation) early() bool {
	select {
	case <-inv.respondedCh:
		return true
	default:
		return false
	}
}

// postRuntime is the local PostRuntimeExtensionsDuration: from the
// runtime's response POST to the emulator's answer, which comes once every
// extension is done with the invoke. Zero unless the invoke was released
// early and has finished.
func (inv *invocation) postRuntime() time.Duration {
	select {
	case <-inv.finished:
	default:
		return 0
	}
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if inv.acceptedAt.IsZero() || inv.answeredAt.IsZero() {
		return 0
	}
	return inv.answeredAt.Sub(inv.postedAt)
}
