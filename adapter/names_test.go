package adapter

import (
	"regexp"
	"strings"
	"testing"
)

// TestNameShapesAcceptWhatTheirExpressionsAccept: the byte-by-byte checks
// replaced regexps (compiling them cost every binary's init ~10 ms); each
// must accept exactly the strings its expression matches — at every length
// bound, for every byte, and for strings built from the bytes around each
// character class's edges.
func TestNameShapesAcceptWhatTheirExpressionsAccept(t *testing.T) {
	edges := []byte("aAzZ09_-./!'()*?$ \n\x00\x7f\xc3@[`{:")
	for _, n := range []nameShape{toolName, logicalID, envName, indexName, keyPrefix} {
		re := regexp.MustCompile(n.pattern)
		check := func(s string) {
			t.Helper()
			if got, want := n.MatchString(s), re.MatchString(s); got != want {
				t.Errorf("%s: %q accepted=%v, the expression says %v", n, s, got, want)
			}
		}
		for c := range 256 {
			b := string([]byte{byte(c)})
			check(b)
			check("a" + b)
			check(b + "a")
			check("aaa" + b + "a")
		}
		for _, l := range []int{0, 1, 2, 3, 4, n.minLen, n.maxLen - 1, n.maxLen, n.maxLen + 1} {
			if l < 0 {
				continue
			}
			for _, c := range []string{"a", "Z", "9", "_", "-", ".", "/", "é"} {
				check(strings.Repeat(c, l))
				check("a" + strings.Repeat(c, max(l-1, 0)))
			}
		}
		for _, a := range edges {
			for _, b := range edges {
				for _, c := range edges {
					check(string([]byte{a, b, c}))
				}
			}
		}
		check("data/2026/")
		check("/leading")
		check("Notes_v2.by-id")
	}
}
