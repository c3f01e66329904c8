package templatetest

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeBuildProducesArm64Bootstraps runs `make build` as a clean clone
// would (into a temporary BIN_DIR) and checks that every function became a
// static linux/arm64 executable named bootstrap, and that a sam build target
// writes one into ARTIFACTS_DIR. Cross-compiling every function takes a few
// minutes on a cold build cache; -short skips it.
func TestMakeBuildProducesArm64Bootstraps(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-compiles every function; skipped with -short")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make not installed")
	}
	root := repoRoot(t)
	bin := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("make", args...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("make %v: %v\n%s", args, err, out)
		}
	}
	run("--no-print-directory", "build", "BIN_DIR="+bin)
	for _, dir := range functionDirs(t) {
		checkBootstrap(t, filepath.Join(bin, dir, "bootstrap"))
	}

	// One sam build target, as `sam build` runs it; the build cache makes
	// it cheap after the full build.
	artifacts := t.TempDir()
	run("--no-print-directory", "build-BroadcastGetFunction", "ARTIFACTS_DIR="+artifacts)
	checkBootstrap(t, filepath.Join(artifacts, "bootstrap"))
}

func checkBootstrap(t *testing.T, path string) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Error(err)
		return
	}
	if st.Mode().Perm()&0o111 == 0 {
		t.Errorf("%s is not executable", path)
	}
	f, err := elf.Open(path)
	if err != nil {
		t.Errorf("%s: %v", path, err)
		return
	}
	defer f.Close()
	if f.Machine != elf.EM_AARCH64 || f.Class != elf.ELFCLASS64 || f.Type != elf.ET_EXEC {
		t.Errorf("%s: %v %v %v, want an arm64 ELF64 executable", path, f.Machine, f.Class, f.Type)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s is dynamically linked (CGO_ENABLED=0 is missing)", path)
		}
	}
	if s := f.Section(".symtab"); s != nil {
		t.Errorf("%s keeps its symbol table (-ldflags -s is missing)", path)
	}
}

// TestMakeBuildsANewFunctionWithoutATarget: sam build's `make
// build-<LogicalId>` needs no target per function. In a tree with only a
// functions/broadcast_count/main.go the repository's Makefile builds
// BroadcastCountFunction from it, and names the missing directory of a
// function that has none.
func TestMakeBuildsANewFunctionWithoutATarget(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make not installed")
	}
	tree := t.TempDir()
	if err := os.MkdirAll(filepath.Join(tree, "functions", "broadcast_count"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tree, "functions", "broadcast_count", "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	makeN := func(target string) (string, error) {
		cmd := exec.Command("make", "-n", "--no-print-directory", "-f", filepath.Join(repoRoot(t), "Makefile"), target, "ARTIFACTS_DIR=/artifacts")
		cmd.Dir = tree
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	out, err := makeN("build-BroadcastCountFunction")
	if err != nil || !strings.HasSuffix(out, "-o /artifacts/bootstrap ./functions/broadcast_count") {
		t.Fatalf("make build-BroadcastCountFunction: %v\n%s", err, out)
	}
	out, err = makeN("build-BroadcastTallyFunction")
	if err == nil || !strings.Contains(out, "no functions/<dir>/main.go for BroadcastTallyFunction") {
		t.Fatalf("make build-BroadcastTallyFunction without its directory: %v\n%s", err, out)
	}
}
