package benchkit

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Build builds main package pkg (relative to root, the module's directory)
// to out as `mcpfn build` and `make build` build a function for Lambda —
// static, -trimpath, -tags lambda.norpc plus tags, -ldflags='-s -w
// -buildid=' — but for this machine's GOOS/GOARCH, so the benchmark runs
// and sizes the bytes a deployment ships. go build's own cache makes a
// second run cheap.
func Build(ctx context.Context, root, pkg, out string, tags ...string) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath",
		"-tags", strings.Join(append([]string{"lambda.norpc"}, tags...), ","),
		"-ldflags=-s -w -buildid=", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=", "GOARCH=")
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, buf.String())
	}
	return nil
}
