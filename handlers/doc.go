// Package handlers is the demo application's business logic: broadcasts,
// short messages posted to a channel, kept in a DynamoDB table of their own.
//
// It defines five tools — broadcast_create, broadcast_get, broadcast_list,
// broadcast_delete and the long-running broadcast_digest — each deployed as
// its own Lambda function (functions/<tool>/main.go) with its own IAM role.
// The handlers know nothing of Lambda, MCP or audit: typed input in, typed
// output or an *adapter.Error out, and the broadcast id recorded as the
// call's "entityId" dimension so the audit can find every call on a
// broadcast.
//
// The demo is a project like any that uses mcpfn: each tool is one
// adapter.Declare in tools.go or digest.go — its definition (name,
// description, annotations, scopes, schema refinements, and the actions it
// calls on BroadcastsTable) and its handler, a method of the [Store] it
// needs — and its function's main binds it:
//
//	func main() { adapter.Serve(handlers.Create, handlers.StoreFromEnv) }
//
// `mcpfn template` generates template.yaml's mcpfn regions and
// mcpfn-tools.json from those declarations; the tests call the tools with
// mcpfntest.
//
// Three choices shape the domain:
//
//   - A created broadcast's id is derived from the call id, which the adapter
//     keeps stable across retries of one call. A retried create therefore
//     hits its own conditional put, finds the same channel and text, and
//     answers with the same id instead of posting the message twice.
//   - broadcast_list pages with an opaque cursor: base64url of the last key
//     the page evaluated. The cursor is checked on decode (shape, version,
//     channel, key syntax) so a tampered cursor is a VALIDATION_ERROR, not a
//     DynamoDB error scrubbed to INTERNAL_SERVER_ERROR. It is not signed: the
//     most a forged cursor can do is start a page elsewhere in the caller's
//     own channel.
//   - Lengths and patterns live in the input schemas, so tools/list
//     advertises them and the adapter rejects bad input before a handler
//     runs.
package handlers
