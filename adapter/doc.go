// Package adapter runs one MCP tool as an AWS Lambda function.
//
// A tool is a typed Go function wrapped by [Define]; its input and output JSON
// Schemas are inferred from its types with the schema library the MCP go-sdk
// uses, so what tools/list advertises and what the function validates are the
// same value. [Start] serves the tool from a function's main:
//
//	func main() { adapter.Start(handlers.Hello) }
//
// or, for a tool declared with [Declare] whose handler needs a dependency,
//
//	func main() { adapter.Serve(handlers.NoteAdd, handlers.NotesFromEnv) }
//
// A tool author needs: [Start], [Serve] or [New]; [Define], [Declare] and
// [ToolDef] (with what the tool's function needs on AWS: [TableAccess],
// [BucketAccess], Timeout, MemoryMB — `mcpfn template` generates its resources from them);
// the [Call]
// a handler receives; [Error], [NewError] and the [Code] registry; [Hooks]
// for cross-cutting concerns; the With… options; content results and
// [RequireInput]. The wire format a gateway speaks to the function lives in
// package wire, not here.
//
// One call, reading top to bottom, one file per step:
//
//   - tool.go, declare.go, needs.go: a tool's definition, declared once and
//     bound per function, and what its function needs on AWS;
//     declaration.go, describe.go: the definition as data ([Declaration]),
//     printed by a function asked for it ([EnvDescribe]) — the source of the
//     project's catalog and template;
//   - start.go, function.go, options.go: the function, its options and limits;
//   - invoke.go: [Function.Invoke], the Lambda entry point: decode, serve each
//     call (a batch's concurrently), answer in the caller's format;
//   - decode.go: recognises the payload and hands it to decode_envelope.go
//     (the mcpfn envelope), decode_jsonrpc.go (JSON-RPC, batches included)
//     or decode_agentcore.go (an AgentCore Gateway Lambda-target call, its
//     reserved "_mcpfn" argument taken out first);
//   - call.go: the per-call context ([Call]), built from the invocation and
//     the Lambda context only; meta.go (MCP facts), identity.go (the verified
//     caller, the scope check), trace.go (the trace position), credentials.go,
//     teardown.go: one concept of the call each;
//   - chain.go: the hook chain ([Hooks], hooks.go, lists the nine steps) as a
//     flat list of step functions, each returning its stage and error;
//     authenticate.go (the call token), validate.go and fastvalidate.go
//     (step 3), bounded.go (a step under the call's deadline, panics
//     recovered), multiround.go ([RequireInput] and the sealed request state);
//   - result.go: the MCP CallToolResult, checking the output schema
//     (content.go: outputs made of content blocks — images, audio, resources;
//     nilempty.go: a nil slice or map of the output written [] or {}, as
//     the schema portable.go infers says — decision 0028);
//   - errors.go: the [Error] a caller sees, and the scrubbing of everything else;
//   - audit.go: the audit stage, an ordinary hook set that turns the call into
//     rows for a [Recorder] (auditrow.go: a row from the call's snapshot);
//     auditenv.go builds one from the environment and, on Lambda, has the
//     final rows written after the response, before the runtime asks for
//     its next invocation (ADRs 0023, 0039).
//
// Long-running calls (docs/long-running.md): progress.go ([Call.Progress],
// [Call.Log], their throttle), invoke.go's [Function.InvokeStream] (a
// streamed answer), task.go (a task run: claim, watch, record the outcome;
// [TaskSupport]), cancel.go (a caller's cancel reaching the handler's
// context), localstream.go (the local stack's copy of a stream: local only).
//
// Invoke never returns a Lambda function error: every payload, however
// malformed, is answered in the caller's format and observed by AfterToolCall
// once, so it is audited.
package adapter
