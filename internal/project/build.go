package project

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
)

// BuildHost builds functions for this machine into binDir/<function> as the
// local stack runs them — static (CGO_ENABLED=0), without aws-lambda-go's RPC
// mode (-tags lambda.norpc), plus tags — in one go command, and returns each
// binary's path. Outputs keep their paths, so go's own up-to-date check makes
// a rebuild cheap.
func (p *Project) BuildHost(ctx context.Context, binDir string, functions []string, tags ...string) (map[string]string, error) {
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return nil, err
	}
	// go build -o DIR/ builds many mains at once, each named after its
	// directory.
	args := []string{"build", "-o", binDir + string(filepath.Separator), "-tags", joinTags(append([]string{"lambda.norpc"}, tags...))}
	for _, fn := range functions {
		args = append(args, Package(fn))
	}
	cmd := exec.CommandContext(ctx, goCommand(), args...)
	cmd.Dir = p.Root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=", "GOARCH=")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go build %v: %w\n%s", functions, err, out.String())
	}
	bins := make(map[string]string, len(functions))
	for _, fn := range functions {
		bins[fn] = filepath.Join(binDir, fn)
	}
	return bins, nil
}

func joinTags(tags []string) string {
	out := ""
	for i, t := range tags {
		if i > 0 {
			out += ","
		}
		out += t
	}
	return out
}

func sortStrings(s []string) { sort.Strings(s) }

// goCommand is the go binary on PATH.
func goCommand() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "go"
}
