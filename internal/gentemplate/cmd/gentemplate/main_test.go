package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunRewritesAStaleBlock: run restores a hand-edited generated block
// of a copy of the repository's template.yaml, in place.
func TestRunRewritesAStaleBlock(t *testing.T) {
	orig, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const line = "    Value: !GetAtt BroadcastGetFunction.Arn\n"
	if !strings.Contains(string(orig), line) {
		t.Fatalf("template.yaml has no %q", line)
	}
	path := filepath.Join(t.TempDir(), "template.yaml")
	stale := strings.Replace(string(orig), line, "    Value: stale\n", 1)
	if err := os.WriteFile(path, []byte(stale), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(path); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != string(orig) {
		t.Fatal("run did not restore the generated block")
	}
}
