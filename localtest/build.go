package localtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// buildJob is one `go build` of a main package to an output path.
type buildJob struct {
	pkg, out string
	lambda   bool     // a function: -tags lambda.norpc, as on Lambda
	tags     []string // more build tags (a function's build flavour)
	stripped bool     // trimmed and stripped, as `make build` builds for Lambda
}

// buildAll runs the builds two at a time (each go build already uses every
// core for compiling; two overlap one's linking with the other's compiling).
// Outputs keep their paths between runs, so go's own up-to-date check skips
// the link when nothing changed and a warm start costs well under a second
// per binary.
//
// Stacks in different processes may share a bin directory (the test
// packages do, to share builds). go build replaces an output by unlinking
// and rewriting it, so one process could start an emulator from a file
// another is still writing; an exclusive lock on the directory serializes
// the builds, and the second process finds everything up to date.
func buildAll(ctx context.Context, root, binDir string, jobs []buildJob) error {
	unlock, err := lockDir(binDir)
	if err != nil {
		return err
	}
	defer unlock()
	sem := make(chan struct{}, 2)
	var wg sync.WaitGroup
	errs := make([]error, len(jobs))
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = goBuild(ctx, root, j)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func goBuild(ctx context.Context, root string, j buildJob) error {
	if err := os.MkdirAll(filepath.Dir(j.out), 0o755); err != nil {
		return err
	}
	args := []string{"build", "-o", j.out}
	tags := j.tags
	if j.lambda {
		tags = append([]string{"lambda.norpc"}, tags...)
	}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	if j.stripped {
		// The Makefile's GOFLAGS_LAMBDA, so the size is the deployed one.
		args = append(args, "-trimpath", "-ldflags=-s -w -buildid=")
	}
	args = append(args, j.pkg)
	cmd := exec.CommandContext(ctx, goCommand(), args...)
	cmd.Dir = root
	// Static binaries, as on Lambda's OS-only runtime; for the host's
	// GOOS/GOARCH, whatever the caller's environment says.
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=", "GOARCH=")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("localtest: go build %s: %w\n%s", j.pkg, err, out.String())
	}
	return nil
}

// lockDir takes an exclusive flock on dir/.build.lock, waiting for it.
func lockDir(dir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, ".build.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("localtest: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("localtest: locking %s: %w", dir, err)
	}
	return func() { f.Close() }, nil // closing the file releases the lock
}

// goCommand is the go binary on PATH; go.mod's go line makes it switch to
// the module's toolchain if it is older.
func goCommand() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "go"
}
