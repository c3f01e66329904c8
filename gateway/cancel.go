package gateway

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mcpfn/mcpfn/wire"
)

// Cancellation of a synchronous call (docs/decisions/0030). The gateway is
// stateless: the notifications/cancelled of a call arrives in another HTTP
// request, often at another gateway instance, while the call's Invoke is
// in flight. So the cancel is a marker in the tasks table
// (taskstore.MarkCancelled): the forwarded envelope names the call's marker
// (its Cancel field), and the function, which polls it while the handler
// runs, cancels the handler's context. What that can and cannot stop is in
// docs/long-running.md.
//
// Every new client numbers its requests from 0, so the marker is keyed by
// the owner, the verified session id (session.go) and the JSON-RPC id: one
// client's cancel cannot stop another client's call. A client without a
// session id keeps the owner + id key, which only a verified caller gets
// (unverified callers are one owner whose small ids collide).

// cancelMarker is the marker a forwarded synchronous call's function
// watches, or nil (no tasks table; a request that cannot be cancelled).
func (g *Gateway) cancelMarker(ri *requestInfo) *wire.CancelMarker {
	if g.tasks == nil {
		return nil
	}
	key := legacyKey(ri, ri.jsonrpcID)
	if key == "" {
		return nil
	}
	return &wire.CancelMarker{Owner: ownerOf(ri.identity), Request: key}
}

// legacyKey is the marker key of the legacy request id of a caller, "" when
// it has none (no id, or neither a session nor a verified caller). Request
// keys are disjoint: a compact JSON-RPC id starts with a digit, '-' or '"'.
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

// markCancelled records the caller's notifications/cancelled of request
// id. Only the caller's own call can match: the marker is keyed by its
// owner and session.
func (g *Gateway) markCancelled(ctx context.Context, ri *requestInfo, id json.RawMessage) {
	if key := legacyKey(ri, id); key != "" {
		g.writeMarker(ctx, ownerOf(ri.identity), key)
	}
}

// writeMarker records a cancel. A failure is logged: a notification has no
// answer to carry it.
func (g *Gateway) writeMarker(ctx context.Context, owner, key string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := g.tasks.MarkCancelled(ctx, owner, key); err != nil {
		g.cfg.Logger.Warn("mcpfn gateway: recording a cancellation failed", "error", err.Error())
	}
}
