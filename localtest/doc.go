// Package localtest runs the whole mcpfn application on one machine without
// Docker — the stack behind `make local` and the end-to-end tests:
//
//   - every tool function of template.yaml, built for the host and run under
//     the Lambda Runtime Interface Emulator (RIE), a pool of emulator
//     processes per function because one emulator serves one invoke at a time;
//   - a Lambda Invoke API router (the paths of `sam local start-lambda`) that
//     the gateway and any AWS SDK client call functions by name through;
//   - DynamoDB Local with the tables of template.yaml (or an existing
//     endpoint), the X-Ray daemon stand-in writing xray.jsonl, and a local
//     JWT issuer;
//   - an S3 stand-in with the buckets of template.yaml (s3.go:
//     internal/s3standin behind internal/s3front, on TLS), which the
//     functions reach through AWS_ENDPOINT_URL_S3;
//   - the gateway, configured from template.yaml's GatewayFunction
//     environment, serving MCP on /mcp;
//   - an AgentCore Gateway stand-in (agentcore.go), wired as template.yaml
//     declares its AWS::BedrockAgentCore::Gateway: CUSTOM_JWT against the
//     local issuer, the REQUEST interceptor function and one Lambda target
//     per tool, all invoked through the Invoke API.
//
// Start brings all of it up and Close tears all of it down:
//
//	st, err := localtest.Start(ctx, localtest.Config{MCPAddr: "127.0.0.1:0"})
//	if err != nil { ... }
//	defer st.Close()
//	// point an MCP client at st.MCPURL() with "Authorization: Bearer "+st.Token()
//
// Functions and the gateway get their environment from template.yaml, with
// references to tables and functions resolved to local names, so the local
// wiring is the deployed wiring. The emulator and DynamoDB Local come from
// the per-user cache, installed there on a first run (internal/toolcache),
// so the stack works the same from any module that depends on mcpfn. docs/local.md is the user guide and
// docs/decisions/0011-local-stack-shape.md records why the stack is shaped
// this way.
//
// It is built for Linux, where /proc and the parent-death signal make sure
// no process outlives the stack; other Unix systems work on a best-effort
// basis (see proc_other.go), Windows not at all (the emulator is Unix-only).
package localtest
