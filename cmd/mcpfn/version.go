package main

import (
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
)

// Release is this mcpfn's version (CHANGELOG.md). A module that requires
// mcpfn by a tag shows the same version in `go list -m`.
const Release = "v0.1.0"

// modulePath is mcpfn's module.
const modulePath = "github.com/mcpfn/mcpfn"

// mcpfnModule is how this binary got mcpfn: its version in the build (the
// main module's, or a dependency's when run as `go tool mcpfn` from a
// project) and the directory a replace directive points it at, if any.
func mcpfnModule() (version, replaceDir string) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "", ""
	}
	mods := append([]*debug.Module{&bi.Main}, bi.Deps...)
	for _, m := range mods {
		if m.Path != modulePath {
			continue
		}
		if r := m.Replace; r != nil && (filepath.IsAbs(r.Path) || strings.HasPrefix(r.Path, ".")) {
			return m.Version, r.Path // a directory replace: a checkout
		}
		return m.Version, ""
	}
	return "", ""
}

func runVersion(stdout io.Writer) int {
	v, dir := mcpfnModule()
	fmt.Fprintf(stdout, "mcpfn %s", Release)
	switch {
	case dir != "":
		fmt.Fprintf(stdout, " (module %s replaced by %s)", modulePath, dir)
	case v != "" && v != "(devel)" && v != Release:
		fmt.Fprintf(stdout, " (module %s %s)", modulePath, v)
	}
	fmt.Fprintf(stdout, " %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return 0
}
