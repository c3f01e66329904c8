// Package adapter runs one MCP tool as an AWS Lambda function.
//
// A tool is a typed Go function wrapped by [Define]; its input and output JSON
// Schemas are inferred from its types with the schema library the MCP go-sdk
// uses, so what tools/list advertises and what the function validates are the
// same value. [Start] serves the tool from a function's main:
//
//	func main() { adapter.Start(handlers.BroadcastGet(store)) }
//
// For every invocation the adapter, reading top to bottom:
//
//   - decode.go: recognises the payload — the mcpfn envelope from the gateway,
//     an AgentCore Gateway Lambda-target call (its reserved "_mcpfn" argument,
//     the interceptor's call token, taken out first), or JSON-RPC (a batch
//     included);
//   - chain.go: rebuilds the per-call context ([Call], context.go) from that
//     invocation and the Lambda context only, and runs the hook chain
//     ([Hooks], hooks.go) in the call's own context;
//   - validate.go: checks the arguments against the input schema;
//   - result.go: builds the MCP CallToolResult, checking the output schema
//     (content.go: outputs made of content blocks — images, audio, resources);
//   - errors.go: the [Error] a caller sees, and the scrubbing of everything else;
//   - multiround.go: calls that ask the client for input ([RequireInput]) and
//     the sealed request state that carries a tool from one round to the next;
//   - audit.go: turns the call into an audit row for an [Recorder].
//
// Invoke never returns a Lambda function error: every payload, however
// malformed, is answered in the caller's format and observed by AfterToolCall
// once, so it is audited.
package adapter
