package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/mcpfn/mcpfn/wire"
)

// Cancellation of a synchronous call (docs/decisions/0030). The gateway is
// stateless, and a function runs on after the Invoke that started it is
// abandoned, so a cancel reaches the function as a marker in the tasks table
// (taskstore.MarkCancelled): the forwarded envelope names the call's marker
// (its Cancel field), and the function, which polls it while the handler
// runs, cancels the handler's context. What that can and cannot stop is in
// docs/long-running.md. The marker's key depends on the era of the call:
//
//   - 2026-07-28 has no sessions, and over HTTP its cancel is the client
//     closing the request's stream (no notifications/cancelled is expected).
//     The marker is keyed by the call id, random per call; the gateway
//     instance holding the Invoke writes it when the request's context ends,
//     and goes on waiting for the function, whose answer (CANCELLED) ends
//     the call with the function's own audit row.
//   - The initialize-era versions (2025-03-26 … 2025-11-25): a disconnect is
//     no cancel; notifications/cancelled is, in another HTTP request, often
//     at another instance. The marker is keyed by the owner, the verified
//     session id (session.go) and the JSON-RPC id; a client without a
//     session id keeps the owner + id key, which only a verified caller gets
//     (unverified callers are one owner whose small ids collide).

// cancelMarker is the marker the function of a synchronous call forwarded
// as env watches, or nil (no tasks table; a legacy request that cannot be
// cancelled).
func (g *Gateway) cancelMarker(ri *requestInfo, env *wire.Envelope) *wire.CancelMarker {
	if g.tasks == nil {
		return nil
	}
	key := callKey(env.CallID)
	if env.MCP.Era != wire.EraModern {
		key = legacyKey(ri, ri.jsonrpcID)
	}
	if key == "" {
		return nil
	}
	return &wire.CancelMarker{Owner: ownerOf(ri.identity), Request: key}
}

// callKey is the marker key of a 2026-07-28 call. Request keys are disjoint:
// a compact JSON-RPC id starts with a digit, '-' or '"'.
func callKey(callID string) string { return "call " + callID }

// legacyKey is the marker key of the legacy request id of a caller, "" when
// it has none (no id, or neither a session nor a verified caller).
func legacyKey(ri *requestInfo, id json.RawMessage) string {
	switch {
	case len(id) == 0 || string(id) == "null":
		return ""
	case ri.session != "":
		return "session " + ri.session + " " + requestKey(id)
	case ri.identity != nil:
		return requestKey(id)
	}
	return ""
}

// serveCancelled answers notifications/cancelled: the go-sdk checks it
// first (protocol version, headers) and accepts it with 202; only then does
// a legacy one mark its request cancelled. A 2026-07-28 one is accepted and
// changes nothing: over HTTP that revision's cancel is the closed stream,
// and without sessions a request id names no one call of the caller's.
func (g *Gateway) serveCancelled(w http.ResponseWriter, r *http.Request, ri *requestInfo, requestID json.RawMessage) {
	buf := newBufferedResponse()
	g.mcp.ServeHTTP(buf, r)
	if buf.status == http.StatusAccepted && r.Header.Get("Mcp-Protocol-Version") < wire.ModernProtocolVersion {
		if key := legacyKey(ri, requestID); key != "" {
			g.writeMarker(r.Context(), ownerOf(ri.identity), key)
		}
	}
	buf.copyTo(w)
}

// cancelWhenGone writes marker m once ctx, the context of a 2026-07-28
// call's request, ends: its client closed the stream. The returned stop
// ends the watch, waiting for a write in progress (on Lambda, work left
// running after the answer may be frozen midway).
func (g *Gateway) cancelWhenGone(ctx context.Context, m *wire.CancelMarker, callID string) (stop func()) {
	written := make(chan struct{})
	unwatch := context.AfterFunc(ctx, func() {
		defer close(written)
		g.cfg.Logger.Info("mcpfn gateway: the client closed the call's stream; cancelling the call", "callId", callID)
		g.writeMarker(ctx, m.Owner, m.Request)
	})
	return func() {
		if !unwatch() {
			<-written
		}
	}
}

// writeMarker records a cancel. A failure is logged: a notification, or a
// client gone, has no answer to carry it.
func (g *Gateway) writeMarker(ctx context.Context, owner, key string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := g.tasks.MarkCancelled(ctx, owner, key); err != nil {
		g.cfg.Logger.Warn("mcpfn gateway: recording a cancellation failed", "error", err.Error())
	}
}
