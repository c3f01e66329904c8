// Package mcpfntest calls a tool the way a deployed gateway calls its Lambda
// function, in-process, for a project's own tests — the httptest of mcpfn.
//
// [Call] serves the tool with the adapter (adapter.New, the function's real
// entry point), signs the call with a test key as the gateway signs it —
// for a caller the test chooses, with its scopes and tenant — and returns
// what the MCP client would see (the output, or the *adapter.Error of a
// failed call) and the audit rows the call would write, kept in memory.
// Progress reports reach a sink the test gives; a tool that asks for input
// ([adapter.RequireInput]) gets the test's answers, round after round.
//
//	res := mcpfntest.Call(t, handlers.Hello, map[string]any{"name": "Ada"})
//	out := mcpfntest.Output[handlers.HelloOutput](t, res)
//
// A tool declared with adapter.Declare is called bound to the test's own
// dependency: mcpfntest.Call(t, notes.Add.Bind(store), args, mcpfntest.As("ann", "notes:write")).
// [DynamoDB] starts DynamoDB Local (once per test binary) with the tables
// the project's own template.yaml defines.
package mcpfntest
