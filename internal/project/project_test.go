package project

import (
	"os"
	"path/filepath"
	"testing"
)

// TestOwnFunctionIsTheMainPackageAtItsCodeUri: a function of the project's
// own is built from its CodeUri when that directory holds a main package,
// and from nowhere otherwise (the module root, a library, a path outside the
// project).
func TestOwnFunctionIsTheMainPackageAtItsCodeUri(t *testing.T) {
	root := t.TempDir()
	write := func(rel, body string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/x\n\ngo 1.26\n")
	write("workers/orders/main.go", "package main\n\nfunc main() {}\n")
	write("lib/lib.go", "package lib\n")
	p, err := Find(root)
	if err != nil {
		t.Fatal(err)
	}
	for uri, want := range map[string]string{
		"workers/orders":    "./workers/orders",
		"./workers/orders/": "./workers/orders",
		"lib":               "",
		".":                 "",
		"":                  "",
		"../elsewhere":      "",
		"/abs/path":         "",
	} {
		if got := p.OwnFunction(uri); got != want {
			t.Errorf("OwnFunction(%q) = %q, want %q", uri, got, want)
		}
	}
}
