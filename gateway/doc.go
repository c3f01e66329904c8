// Package gateway is the hosted MCP endpoint of mcpfn: an MCP server (go-sdk
// streamable HTTP, stateless, JSON responses) whose tools/list is the tool
// catalog and whose every tools/call is forwarded, as an mcpfn envelope, to
// the tool's own Lambda function with a synchronous lambda:Invoke.
//
// The gateway authenticates each request once (IAM from the Function URL's
// request context, a JWT verified against the issuer's JWKS, or explicitly
// none) and puts only that verified identity in the envelope: the client's
// self-reported name, its session id and its headers are passed on as
// attribution or caller data, never as identity. It serves both MCP eras:
// 2026-07-28 requests carry their protocol version and client info in _meta,
// legacy requests (2025-03-26 … 2025-11-25) get the era and version the
// transport implies, and 2025-03-26 JSON-RPC batches are split and forwarded
// concurrently, one invocation per call.
//
// Failures between the gateway and the function (throttling, service errors,
// crashes, timeouts) become isError tool results in the adapter's error body
// shape with a retryable flag, so the model can decide what to do and the
// gateway keeps serving. A protocol error reported by the function (unknown
// tool, malformed params) stays a JSON-RPC error.
//
// Use [ConfigFromEnv] and [New], then [StartLambda] on Lambda (a
// RESPONSE_STREAM Function URL, [Gateway.FunctionURLHandler]) or
// [Gateway.ListenAndServe] locally. docs/gateway.md describes the
// configuration and docs/decisions/0005–0007 the choices behind it.
package gateway
