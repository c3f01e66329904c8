// Package agentcore is the mcpfn REQUEST interceptor for Amazon Bedrock
// AgentCore Gateway: the Lambda function the gateway calls with every MCP
// request before it reaches a target, so that a tool function behind
// AgentCore learns who called it, verifiably.
//
// A Lambda target behind AgentCore receives only the tool's arguments and a
// client context (bedrockAgentCoreToolName, …) that anyone allowed to invoke
// the function can set too. For every tools/call the interceptor therefore
//
//  1. verifies the caller's bearer JWT itself (the gateway's own verifier,
//     [gateway.JWTVerifier]: JWKS signature, issuer, audience, expiry), from
//     the headers AgentCore passes with PassRequestHeaders: true;
//  2. maps params.name, "<target>___<tool>", to the tool and its function;
//  3. removes any client-supplied "_mcpfn" argument;
//  4. refuses a caller without the tool's scopes (handlers catalog) with an
//     isError tool result in the adapter's error body, so the function is
//     never invoked;
//  5. signs a call token for the tool's function (its own key from Secrets
//     Manager; signer "mcpfn-agentcore-interceptor"; a fresh call id; the
//     verified caller; the digest of the arguments without "_mcpfn") and
//     puts it into params.arguments as {"_mcpfn":{"callToken":"…"}}.
//
// The function's adapter strips "_mcpfn" before anything reads the
// arguments and verifies the token (wire.ReservedArgument). A JWT that does
// not verify is answered with HTTP 401 and a JSON-RPC error,
// short-circuiting the gateway.
//
// Before any of that, a body that two JSON parsers could read differently
// is refused (HTTP 400, -32600): not UTF-8, a key repeated at any depth, or
// keys that differ only in case in the message or its params (strict.go);
// so is a Mcp-Method or Mcp-Name header that disagrees with the body
// (-32020). Every other method passes through unchanged once its name is
// printable ASCII and not tools/call in another case: it reaches no target.
//
// Event shapes follow the AgentCore interceptor documentation (input
// version "1.0", output version "1.0"); see docs/guide/agentcore-gateway.md
// for what was and was not checked against AWS.
package agentcore
