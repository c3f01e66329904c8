package toolcache

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// The Lambda Runtime Interface Emulator: its main package and the version
// installed, the one mcpfn's go.mod pins (a test keeps the two equal, so
// `go get -tool` upgrades are not half done).
const (
	EmulatorModule  = "github.com/aws/aws-lambda-runtime-interface-emulator"
	EmulatorPackage = EmulatorModule + "/cmd/aws-lambda-rie"
	EmulatorVersion = "v0.0.0-20261030222936-bef5c4ba774d"
)

// Emulator returns the path of an aws-lambda-rie binary for this machine:
// $MCPFN_RIE_BIN if set, else the cache's, installed on first use with `go
// install` from the emulator's own module.
func (c *Cache) Emulator(ctx context.Context) (string, error) {
	if p := os.Getenv(EnvRIEBin); p != "" {
		if !isFile(p) {
			return "", fmt.Errorf("toolcache: %s=%s is not a file; unset it and `mcpfn local` installs the emulator", EnvRIEBin, p)
		}
		return p, nil
	}
	return c.ensure(ctx, tool{
		name:    "the Lambda Runtime Interface Emulator " + EmulatorVersion,
		kind:    "aws-lambda-rie",
		key:     EmulatorVersion + "-" + runtime.GOOS + "_" + runtime.GOARCH,
		install: goInstall,
		locate: func(dir string) (string, error) {
			p := filepath.Join(dir, "aws-lambda-rie"+exeSuffix())
			if !isFile(p) {
				return "", fmt.Errorf("no %s", p)
			}
			return p, nil
		},
	})
}

// goInstall builds the emulator into dir with `go install pkg@version`,
// which resolves the emulator's own module and go.sum (checked against the
// checksum database) and never the go.mod of the directory it runs in. The
// user's environment is kept — GOPROXY, GOCACHE, GOMODCACHE, GOTOOLCHAIN
// all apply — except what could send the build elsewhere: a workspace
// (GOWORK), -mod and -modfile in GOFLAGS, a GOBIN, and GOOS/GOARCH/cgo
// settings meant for the user's own cross-builds.
func goInstall(ctx context.Context, dir string) error {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("toolcache: the Lambda Runtime Interface Emulator is built with the go command, which is not on PATH: install Go and run %s again, or set %s to an aws-lambda-rie binary", retryCommand, EnvRIEBin)
	}
	cmd := exec.CommandContext(ctx, goCmd, "install", EmulatorPackage+"@"+EmulatorVersion)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GOBIN="+dir,
		"GOWORK=off",
		"GOFLAGS="+installGoFlags(os.Getenv("GOFLAGS")),
		"GOOS="+runtime.GOOS,
		"GOARCH="+runtime.GOARCH,
		"CGO_ENABLED=0", // static, and no C toolchain needed
	)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("toolcache: installing the Lambda Runtime Interface Emulator: go install %s@%s: %w\n%s\n(the go command needs its module proxy, GOPROXY, reachable; run %s again once it is, or set %s to an aws-lambda-rie binary)",
			EmulatorPackage, EmulatorVersion, err, bytes.TrimSpace(out.Bytes()), retryCommand, EnvRIEBin)
	}
	return nil
}

// installGoFlags is GOFLAGS without -mod and -modfile, which pkg@version
// refuses or would apply to a module that is not ours, ending in
// -mod=readonly: the default there, and a non-empty value, so that a
// GOFLAGS from `go env -w` (which applies only when the variable is empty)
// cannot bring them back.
func installGoFlags(goflags string) string {
	var keep []string
	for _, f := range strings.Fields(goflags) {
		name, _, _ := strings.Cut(strings.TrimLeft(f, "-"), "=")
		if name == "mod" || name == "modfile" {
			continue
		}
		keep = append(keep, f)
	}
	return strings.Join(append(keep, "-mod=readonly"), " ")
}

func exeSuffix() string {
	if runtime.GOOS == "windows" {
		return ".exe"
	}
	return ""
}
