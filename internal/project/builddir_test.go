package project

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestBuildDirRemovesGoneProjects: every project built leaves its
// functions' binaries in the per-user cache; a project whose directory is
// gone (a test's temporary project: one per run) has its entry removed at
// the next build of any project, while a live project's entry, and an entry
// another mcpfn may be making right now, stay.
func TestBuildDirRemovesGoneProjects(t *testing.T) {
	cache := t.TempDir()
	t.Setenv(EnvCacheDir, cache)
	newProject := func() *Project {
		root := t.TempDir()
		if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module example.com/x\n\ngo 1.26\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := Find(root)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	build := func(p *Project) string {
		t.Helper()
		bin, err := p.BuildDir()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(bin, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(bin, "tool"), []byte("binary"), 0o755); err != nil {
			t.Fatal(err)
		}
		return filepath.Base(filepath.Dir(bin))
	}
	live, gone := newProject(), newProject()
	liveEntry, goneEntry := build(live), build(gone)
	if err := os.RemoveAll(gone.Root); err != nil {
		t.Fatal(err)
	}
	projects := filepath.Join(cache, "projects")
	for name, age := range map[string]time.Duration{"oldunnamed": 2 * time.Hour, "newunnamed": time.Minute} {
		dir := filepath.Join(projects, name)
		if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
			t.Fatal(err)
		}
		then := time.Now().Add(-age)
		if err := os.Chtimes(dir, then, then); err != nil {
			t.Fatal(err)
		}
	}

	if again := build(live); again != liveEntry {
		t.Fatalf("the live project's entry moved: %s, then %s", liveEntry, again)
	}
	es, err := os.ReadDir(projects)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range es {
		left = append(left, e.Name())
	}
	want := []string{liveEntry, "newunnamed"}
	slices.Sort(want)
	if !slices.Equal(left, want) {
		t.Errorf("entries after the next build: %q, want %q (the gone project's %s and the old unnamed entry removed)", left, want, goneEntry)
	}
	if _, err := os.Stat(filepath.Join(projects, liveEntry, "bin", "tool")); err != nil {
		t.Errorf("the live project's binary: %v", err)
	}
}
