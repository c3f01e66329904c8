package linediff

import (
	"strings"
	"testing"
)

func TestUnifiedShowsOnlyTheChangeWithContext(t *testing.T) {
	a := "1\n2\n3\n4\n5\n6\n7\n8\n9\n"
	b := "1\n2\n3\n4\nfive\n6\n7\n8\n9\n"
	got := Unified("a", "b", a, b, 2)
	want := "--- a\n+++ b\n@@ -3,5 +3,5 @@\n 3\n 4\n-5\n+five\n 6\n 7\n"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if Unified("a", "b", a, a, 2) != "" {
		t.Fatal("equal texts differ")
	}
}

func TestUnifiedAddedAndRemovedLines(t *testing.T) {
	got := Unified("a", "b", "x\ny\n", "x\nz\ny\n", 1)
	if !strings.Contains(got, "+z") || strings.Contains(got, "-") && strings.Contains(got, "\n-x") {
		t.Fatalf("got\n%s", got)
	}
	got = Unified("a", "b", "", "new\n", 3)
	if !strings.Contains(got, "@@ -1,0 +1,1 @@\n+new") {
		t.Fatalf("got\n%s", got)
	}
}
