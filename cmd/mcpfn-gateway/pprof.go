//go:build mcpfn_pprof

package main

// Built only with -tags mcpfn_pprof (`make bench-gateway` with -cpuprofile,
// -coldprofile or -coldallocs builds it so), never into a deployed gateway:
// net/http/pprof on its own listener at MCPFN_PPROF_ADDR, so a CPU profile
// of the gateway under load can be taken from outside the process without
// touching the MCP handler; and profiles of its cold start
// (internal/coldprof).

import "github.com/mcpfn/mcpfn/internal/coldprof"

func init() { coldprof.StartAll() }
