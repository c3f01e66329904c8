package templatetest

import (
	"bytes"
	"debug/elf"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/catalog"
)

// TestMcpfnBuildProducesArm64Bootstraps runs `mcpfn build -all` as a clean
// clone would (into a temporary directory) and checks that every function
// of template.yaml became a static linux/arm64 executable named bootstrap,
// that the gateway and the interceptor carry the catalog file beside theirs
// (they list and authorize from it; a tool function has none), and that
// sam build's way — `mcpfn build <LogicalId>` into ARTIFACTS_DIR — writes
// one bootstrap there. Cross-compiling every function takes a few minutes
// on a cold build cache; -short skips it.
func TestMcpfnBuildProducesArm64Bootstraps(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-compiles every function; skipped with -short")
	}
	root := repoRoot(t)
	out := t.TempDir()
	if stdout, stderr, err := runMcpfn(t, root, nil, "build", "-all", "-o", out); err != nil {
		t.Fatalf("mcpfn build -all: %v\n%s%s", err, stdout, stderr)
	}
	want, err := os.ReadFile(filepath.Join(root, catalog.FileName))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range raw(t).LogicalIDs(serverlessFunction) {
		checkBootstrap(t, filepath.Join(out, id, "bootstrap"))
		got, err := os.ReadFile(filepath.Join(out, id, catalog.FileName))
		_, skeleton := skeletonFunctions[id]
		switch {
		case skeleton && err != nil:
			t.Errorf("%s: no %s beside its bootstrap: %v", id, catalog.FileName, err)
		case skeleton && !bytes.Equal(got, want):
			t.Errorf("%s: its %s is not the project's", id, catalog.FileName)
		case !skeleton && err == nil:
			t.Errorf("%s, a tool function, carries %s: a tool function never reads the catalog", id, catalog.FileName)
		}
	}

	// One function, as `sam build` runs it (the build cache makes it
	// cheap after the full build).
	artifacts := t.TempDir()
	if stdout, stderr, err := runMcpfn(t, root, []string{"ARTIFACTS_DIR=" + artifacts}, "build", "BroadcastGetFunction"); err != nil {
		t.Fatalf("ARTIFACTS_DIR=… mcpfn build BroadcastGetFunction: %v\n%s%s", err, stdout, stderr)
	}
	checkBootstrap(t, filepath.Join(artifacts, "bootstrap"))
}

// TestMcpfnBuildNamesAFunctionItCannotBuild: a logical id that is no
// function of the template fails with the id and nothing built.
func TestMcpfnBuildNamesAFunctionItCannotBuild(t *testing.T) {
	artifacts := t.TempDir()
	_, stderr, err := runMcpfn(t, repoRoot(t), nil, "build", "-o", artifacts, "BroadcastTallyFunction")
	if err == nil || !strings.Contains(stderr, "no AWS::Serverless::Function BroadcastTallyFunction") {
		t.Fatalf("mcpfn build BroadcastTallyFunction: %v\n%s", err, stderr)
	}
	if _, err := os.Stat(filepath.Join(artifacts, "bootstrap")); err == nil {
		t.Error("a bootstrap was written")
	}
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
