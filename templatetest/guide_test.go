package templatetest

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/handlers"
	"github.com/mcpfn/mcpfn/internal/gentemplate"
	"github.com/mcpfn/mcpfn/internal/samtemplate"
)

// goBlock is a fenced Go block of a Markdown page.
var goBlock = regexp.MustCompile("(?s)```go\n(.*?)```")

// yamlBlock is a fenced YAML block of a Markdown page.
var yamlBlock = regexp.MustCompile("(?s)```yaml\n(.*?)```")

// guidePage reads docs/guide/write-a-tool.md.
func guidePage(t *testing.T) string {
	t.Helper()
	page, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "guide", "write-a-tool.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(page)
}

// withGuidesFunction is template.yaml with the page's one template
// resource, BroadcastCountFunction, written where the call keys begin (a
// developer's step 3 before `make template`).
func withGuidesFunction(t *testing.T) []byte {
	t.Helper()
	var resource string
	for _, m := range yamlBlock.FindAllStringSubmatch(guidePage(t), -1) {
		if strings.HasPrefix(m[1], "  BroadcastCountFunction:\n") {
			resource = m[1]
		}
	}
	if resource == "" {
		t.Fatal("the page has no YAML block starting with BroadcastCountFunction")
	}
	src, err := os.ReadFile(filepath.Join(repoRoot(t), "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const at = "  # ---- call keys"
	if !bytes.Contains(src, []byte(at)) {
		t.Fatalf("template.yaml has no %q line to add the guide's function before", at)
	}
	return bytes.Replace(src, []byte(at), []byte(resource+"\n"+at), 1)
}

// checkGuidesToolComplete: after `make template`, broadcast_count is named
// wherever broadcast_list is (its key, key policy, map entries, grant
// lists, permissions, AgentCore target, output), the template parses, and a
// second run changes nothing.
func checkGuidesToolComplete(t *testing.T, generated []byte, tools []gentemplate.Tool) {
	t.Helper()
	if n, want := bytes.Count(generated, []byte("BroadcastCount")), bytes.Count(generated, []byte("BroadcastList")); n != want {
		t.Errorf("the generated template names BroadcastCount %d times, BroadcastList %d times: a piece of the new tool is not generated", n, want)
	}
	for _, piece := range []string{
		"broadcast_count=${BroadcastCountFunction}", "broadcast_count=${BroadcastCountCallKey}",
		"  BroadcastCountCallKeyPolicy:", "  BroadcastCountGatewayPermission:",
		"  BroadcastCountAgentCorePermission:", "  BroadcastCountAgentCoreTarget:",
		"  BroadcastCountAgentCoreGatewayPermission:", "  BroadcastCountFunctionArn:",
	} {
		if !bytes.Contains(generated, []byte(piece)) {
			t.Errorf("the generated template lacks %q", piece)
		}
	}
	if _, err := samtemplate.Parse(generated); err != nil {
		t.Fatal(err)
	}
	if tools != nil {
		again, err := gentemplate.Generate(generated, tools)
		if err != nil || !bytes.Equal(again, generated) {
			t.Errorf("a second generation changes the template (%v)", err)
		}
	}
}

// TestTheGuidesToolNeedsOnlyItsFunction: with the page's function resource
// and a catalog holding broadcast_count (here broadcast_list's definition
// renamed), `make template`'s generator writes every other piece.
func TestTheGuidesToolNeedsOnlyItsFunction(t *testing.T) {
	tools, err := gentemplate.Tools(handlers.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	var count gentemplate.Tool
	for _, tl := range tools {
		if tl.Name == handlers.ToolList {
			count = tl
		}
	}
	count.Name, count.Definition.Name = "broadcast_count", "broadcast_count"
	tools = append(tools, count)
	generated, err := gentemplate.Generate(withGuidesFunction(t), tools)
	if err != nil {
		t.Fatal(err)
	}
	checkGuidesToolComplete(t, generated, tools)
}

// TestTheGuidesToolBuilds compiles docs/guide/write-a-tool.md's
// broadcast_count into the repository as its four places would hold it —
// handler, main.go, test — with go's -overlay (nothing is written to the
// tree; the Store.Count the page supposes is a stub), builds the function,
// vets the test, and runs the AgentCore schema generator, which must list
// the new tool: the catalog derives from the declaration alone. Then `make
// template`'s command, over a copy of template.yaml holding the page's
// function resource, must write every other piece of the tool.
func TestTheGuidesToolBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs go commands; skipped with -short")
	}
	root := repoRoot(t)
	page := guidePage(t)
	files := map[string]string{
		"handlers/count_store.go": "package handlers\n\nimport \"context\"\n\n" +
			"func (s *Store) Count(ctx context.Context, channel string) (int, error) { return 0, nil }\n",
	}
	for _, m := range goBlock.FindAllStringSubmatch(page, -1) {
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
	tpl := filepath.Join(tmp, "template.yaml")
	if err := os.WriteFile(tpl, withGuidesFunction(t), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"build", "-overlay", overlayFile, "-o", os.DevNull, "./functions/broadcast_count/"},
		{"vet", "-overlay", overlayFile, "./handlers/"},
		{"run", "-overlay", overlayFile, "./handlers/cmd/schemas", "-o", schemas},
		{"run", "-overlay", overlayFile, "./internal/gentemplate/cmd/gentemplate", "-f", tpl},
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
	generated, err := os.ReadFile(tpl)
	if err != nil {
		t.Fatal(err)
	}
	checkGuidesToolComplete(t, generated, nil)
}
