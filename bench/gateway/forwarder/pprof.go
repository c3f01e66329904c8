//go:build mcpfn_pprof

package main

// Built only with -tags mcpfn_pprof, as cmd/mcpfn-gateway's pprof.go: the
// bench's -cpuprofile profiles the forwarder too, for a like-for-like
// reading of the two gateways' profiles.

import (
	"log"
	"net/http"
	_ "net/http/pprof" // registers /debug/pprof on http.DefaultServeMux
	"os"
	"time"

	"github.com/mcpfn/mcpfn/internal/coldprof"
)

func init() {
	coldprof.Start() // MCPFN_PPROF_COLD(_ALLOCS): the cold start's profiles
	addr := os.Getenv("MCPFN_PPROF_ADDR")
	if addr == "" {
		return
	}
	srv := &http.Server{Addr: addr, Handler: http.DefaultServeMux, ReadHeaderTimeout: 10 * time.Second}
	go func() { log.Print(srv.ListenAndServe()) }()
}
