// Package handlers is the demo application's business logic: broadcasts,
// short messages posted to a channel, kept in a DynamoDB table of their own.
//
// It defines eight tools, each deployed as its own Lambda function
// (functions/<tool>/main.go) with its own IAM role:
//
//   - broadcast_create, broadcast_get, broadcast_list, broadcast_delete
//     (tools.go): the broadcasts themselves;
//   - broadcast_digest (digest.go): a long-running summary of a channel,
//     with progress, runnable as a task;
//   - broadcast_attach and broadcast_attachment (attach.go): one file per
//     broadcast, its bytes in the demo's own S3 bucket, returned as an MCP
//     embedded resource with a blob;
//   - broadcast_export (archive.go): one zip of a channel's broadcasts and
//     their attachments, as an embedded resource, with progress per
//     broadcast, runnable as a task.
//
// The handlers know nothing of Lambda, MCP or audit: typed input in, typed
// output (or adapter.Content: blocks and a structured value) or an
// *adapter.Error out, and the broadcast id (a channel, for the tools that
// read one) recorded as the call's "entityId" dimension so the audit can
// find every call on it.
//
// The demo is a project like any that uses mcpfn: each tool is one
// adapter.Declare — its definition (name, description, annotations, scopes,
// schema refinements, the actions it calls on BroadcastsTable and on
// AttachmentsBucket) and its handler, a method of the [Store] it needs —
// and its function's main binds it:
//
//	func main() { adapter.Serve(handlers.Create, handlers.StoreFromEnv) }
//	func main() { adapter.Serve(handlers.Attach, handlers.AttachmentStoreFromEnv) }
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
//
// Attachments are the demo's own data, in template.yaml's AttachmentsBucket
// (not mcpfn's payloads bucket, whose objects expire within days):
//
//   - Each attach writes an object of its own,
//     attachments/<broadcastId>/<attachmentId>, and records its name, type,
//     size, SHA-256, key and version on the broadcast's item in one
//     conditional update that returns the attachment it replaced. Keys are
//     never overwritten, so of two attaches at once the item ends naming
//     one current object, and each replaced object is removed by exactly the
//     call that replaced it.
//   - Every read names the recorded version and checks the bytes against
//     the recorded size and SHA-256: a version deleted behind the item's
//     back (or expired) is NOT_FOUND saying so, other bytes an error — never
//     an empty or a wrong file.
//   - The bucket is versioned, and the tools may only hide an object behind
//     a delete marker (broadcast_delete takes the attachment along;
//     broadcast_attach hides the one it replaced), never delete a version:
//     a replaced or deleted file stays recoverable for 30 days, until the
//     bucket's lifecycle expires it. Should the hiding fail, the call still
//     succeeds (its broadcast is already changed) and its row names the
//     object left behind (dimension "leftoverObject").
//   - An export streams each attachment from the bucket through the zip
//     writer into a temporary file, so no attachment is held in memory
//     whole; the finished archive is read back once, because
//     adapter.BlobResource takes the bytes as one slice (and the adapter
//     encodes them as base64 again). broadcast_attachment holds the file
//     once, read into a slice of its exact size; broadcast_attach holds it
//     as the adapter decoded it from its base64 argument.
//   - Results past Lambda's 6 MB (an export easily is) and arguments past
//     the gateway's request bound are mcpfn's business (its claim check,
//     through the payloads bucket), not the handlers': they return plain
//     adapter.Content and take a plain []byte.
package handlers
