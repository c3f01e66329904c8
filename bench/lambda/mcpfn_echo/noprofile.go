//go:build !mcpfn_benchprofile

package main

import "github.com/mcpfn/mcpfn/adapter"

// profiling adds nothing to the measured builds.
func profiling() []adapter.Option { return nil }
