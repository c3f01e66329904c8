package templatetest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// goBlock is a fenced Go block of a Markdown page.
var goBlock = regexp.MustCompile("(?s)```go\n(.*?)```")

// TestTheGuidesToolBuilds compiles docs/guide/write-a-tool.md's
// broadcast_count into the repository as its four places would hold it —
// handler, main.go, test — with go's -overlay (nothing is written to the
// tree; the Store.Count the page supposes is a stub), builds the function,
// vets the test, and runs the AgentCore schema generator, which must list
// the new tool: the catalog derives from the declaration alone.
func TestTheGuidesToolBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs go commands; skipped with -short")
	}
	root := repoRoot(t)
	page, err := os.ReadFile(filepath.Join(root, "docs", "guide", "write-a-tool.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"handlers/count_store.go": "package handlers\n\nimport \"context\"\n\n" +
			"func (s *Store) Count(ctx context.Context, channel string) (int, error) { return 0, nil }\n",
	}
	for _, m := range goBlock.FindAllStringSubmatch(string(page), -1) {
		switch code := m[1]; {
		case strings.HasPrefix(code, "package handlers\n"):
			files["handlers/count.go"] = code
		case strings.HasPrefix(code, "package handlers_test\n"):
			files["handlers/count_test.go"] = code
		case strings.Contains(code, "\npackage main\n"):
			files["functions/broadcast_count/main.go"] = code
		}
	}
	if len(files) != 4 {
		t.Fatalf("the page's Go blocks give %d of the handler, test and main.go", len(files)-1)
	}
	tmp := t.TempDir()
	overlay := map[string]map[string]string{"Replace": {}}
	for rel, code := range files {
		path := filepath.Join(tmp, strings.ReplaceAll(rel, "/", "_"))
		if err := os.WriteFile(path, []byte(code), 0o644); err != nil {
			t.Fatal(err)
		}
		overlay["Replace"][filepath.Join(root, rel)] = path
	}
	b, _ := json.Marshal(overlay)
	overlayFile := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(overlayFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	schemas := filepath.Join(tmp, "schemas")
	for _, args := range [][]string{
		{"build", "-overlay", overlayFile, "-o", os.DevNull, "./functions/broadcast_count/"},
		{"vet", "-overlay", overlayFile, "./handlers/"},
		{"run", "-overlay", overlayFile, "./handlers/cmd/schemas", "-o", schemas},
	} {
		cmd := exec.Command("go", args...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	if _, err := os.Stat(filepath.Join(schemas, "broadcast_count.json")); err != nil {
		t.Fatalf("the catalog does not list the guide's tool: %v", err)
	}
}
