// Package wire is the contract the mcpfn gateway and a tool function speak,
// in one place both sides import: the envelope the gateway sends and the
// response it reads back (envelope.go), the JSON-RPC response and error
// codes (jsonrpc.go), the error body a model reads in an isError tool
// result (errorbody.go), the X-Ray trace header and where aws-lambda-go
// keeps it (trace.go), call ids (ids.go), the Lambda client-context header
// (clientcontext.go), and the AgentCore Gateway Lambda-target keys with the
// interceptor's reserved argument (agentcore.go).
//
// A tool author never needs it: package adapter speaks it for them. It is
// for the sides of the contract — the gateway, the AgentCore interceptor,
// the local stack, a user's own gateway — and for tests that build payloads
// by hand. The schema is documented in docs/envelope.md.
package wire
