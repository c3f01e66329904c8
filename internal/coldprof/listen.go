package coldprof

import (
	"log"
	"net/http"
	_ "net/http/pprof" // registers /debug/pprof on http.DefaultServeMux
	"os"
	"time"
)

// EnvAddr names the address a profiling build serves net/http/pprof on;
// unset: no listener.
const EnvAddr = "MCPFN_PPROF_ADDR"

// StartAll is a profiling build's whole setup, called from its main
// package's init: the cold start's profiles (Start), and net/http/pprof on
// its own listener at EnvAddr, so that a CPU profile under load is taken
// from outside the process without touching the handler it serves.
func StartAll() {
	Start()
	addr := os.Getenv(EnvAddr)
	if addr == "" {
		return
	}
	srv := &http.Server{Addr: addr, Handler: http.DefaultServeMux, ReadHeaderTimeout: 10 * time.Second}
	go func() { log.Print(srv.ListenAndServe()) }()
}
