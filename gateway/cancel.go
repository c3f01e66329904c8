package gateway

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mcpfn/mcpfn/wire"
)

// Cancellation of a synchronous call. The gateway is stateless: the
// notifications/cancelled of a call arrives in another HTTP request, often
// at another gateway instance, while the call's Invoke is in flight. So the
// cancel is a marker in the tasks table (taskstore.MarkCancelled), keyed
// by the caller and the call's JSON-RPC id; the forwarded envelope names
// that marker (its Cancel field), and the function, which polls it while
// the handler runs, cancels the handler's context. What that can and cannot
// stop is in docs/gateway.md.

// cancelMarker is the marker a forwarded synchronous call's function
// watches: nil without a tasks table, a JSON-RPC id or a verified caller.
// Unverified callers (AuthNone) are one owner to the gateway, and their
// JSON-RPC ids (1, 2, 3 …) collide: one could cancel another's call.
func (g *Gateway) cancelMarker(ri *requestInfo) *wire.CancelMarker {
	if g.tasks == nil || len(ri.jsonrpcID) == 0 || ri.identity == nil {
		return nil
	}
	return &wire.CancelMarker{Owner: ownerOf(ri.identity), Request: requestKey(ri.jsonrpcID)}
}

// markCancelled records the caller's notifications/cancelled of request
// id. Only the caller's own call can match: the marker is keyed by its
// owner. A failure is logged; a notification has no answer to carry it.
func (g *Gateway) markCancelled(ctx context.Context, ri *requestInfo, id json.RawMessage) {
	if len(id) == 0 || string(id) == "null" || ri.identity == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := g.tasks.MarkCancelled(ctx, ownerOf(ri.identity), requestKey(id)); err != nil {
		g.cfg.Logger.Warn("mcpfn gateway: recording a cancellation failed", "error", err.Error())
	}
}
