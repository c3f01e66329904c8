// Package boundarytest holds the tests that keep the framework apart from
// its demo (DESIGN.md §1 and §8: the demo is a user of mcpfn like any
// other, and nothing in mcpfn names it). The demo is handlers/ and
// functions/; every other package of the module — the framework, its
// commands, its internal packages, the test kits and the repository's own
// tests — must build, and build its tests, without
// github.com/mcpfn/mcpfn/handlers anywhere in its dependencies. A project of
// a user's own has no handlers package to lean on; what mcpfn needs of a
// project's tools it reads from their declarations (the catalog file), as
// it does here.
//
// A second test keeps the module's imports running one way: the framework's
// public packages import nothing under internal/; only the kits and
// commands above them do (decision 0042).
//
// A third keeps the MCP go-sdk out of every tool function: the adapter
// lists its tool with a type of its own, and only the servers (the gateway,
// package mcptool) link the go-sdk.
//
// The tests ask `go list -deps -test` for the whole graph, so an import
// through any number of packages counts, and names the chain that reaches
// the demo.
package boundarytest
