//go:build mcpfn_pprof

package main

// Built only with -tags mcpfn_pprof, as cmd/mcpfn-gateway's pprof.go: the
// bench's -cpuprofile profiles the forwarder too, for a like-for-like
// reading of the two gateways' profiles.

import "github.com/mcpfn/mcpfn/internal/coldprof"

func init() { coldprof.StartAll() }
