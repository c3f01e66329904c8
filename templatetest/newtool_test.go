package templatetest

import (
	"bytes"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/catalog"
	"github.com/mcpfn/mcpfn/internal/samtemplate"
)

// writeATool is the guide whose code blocks are the new tool a developer
// writes (DESIGN.md §8: handler, main, test, one command): broadcast_count,
// how many broadcasts a channel holds.
const writeATool = "docs/guide/write-a-tool.md"

// guideFiles returns the code blocks of a guide that start with the file
// they hold ("// handlers/count.go"), by path, without that line.
func guideFiles(t *testing.T, page string) map[string]string {
	t.Helper()
	out := map[string]string{}
	re := regexp.MustCompile("(?s)```go\n// ([A-Za-z0-9_./-]+[.]go)\n(.*?)```")
	for _, m := range re.FindAllStringSubmatch(page, -1) {
		out[m[1]] = m[2]
	}
	return out
}

// TestANewToolNeedsOnlyItsCodeAndOneCommand: in a copy of this repository
// with a new tool's handler and main added, one `mcpfn template` writes
// every other piece — the catalog entry, the tool's function with a role of
// exactly its declared access, its call key and key policy, the signers'
// tool maps and grant lists, its invoke permissions, its AgentCore target,
// its output, its sam local event (which reaches the handler once signed) —
// after which `mcpfn template -check` passes and a second run writes
// nothing.
func TestANewToolNeedsOnlyItsCodeAndOneCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every tool function of a copy of the repository; skipped with -short")
	}
	dir := copyRepository(t)
	page, err := os.ReadFile(filepath.Join(dir, writeATool))
	if err != nil {
		t.Fatal(err)
	}
	newTool := guideFiles(t, string(page))
	for _, want := range []string{"handlers/count.go", "functions/broadcast_count/main.go", "handlers/count_test.go"} {
		if _, ok := newTool[want]; !ok {
			t.Fatalf("%s has no code block for %s", writeATool, want)
		}
	}
	for rel, code := range newTool {
		path := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(code), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cache := []string{"MCPFN_CACHE_DIR=" + t.TempDir()} // one build directory for the three runs
	stdout, stderr, err := runMcpfn(t, dir, cache, "template")
	if err != nil {
		t.Fatalf("mcpfn template: %v\n%s%s", err, stdout, stderr)
	}
	for _, want := range []string{"wrote template.yaml", "wrote " + catalog.FileName, "wrote " + filepath.Join(eventsDir, "broadcast_count.json")} {
		if !strings.Contains(stdout, want) {
			t.Errorf("mcpfn template did not say %q:\n%s", want, stdout)
		}
	}

	cat, err := catalog.Load(filepath.Join(dir, catalog.FileName))
	if err != nil {
		t.Fatal(err)
	}
	e, ok := cat.Entry("broadcast_count")
	if !ok || e.Function != "BroadcastCountFunction" || e.Package != "./functions/broadcast_count" {
		t.Fatalf("the catalog's broadcast_count: %+v (listed: %v)", e, ok)
	}

	generated, err := os.ReadFile(filepath.Join(dir, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// broadcast_count declares what broadcast_list does, so it is named as
	// often, wherever broadcast_list is.
	if n, want := bytes.Count(generated, []byte("BroadcastCount")), bytes.Count(generated, []byte("BroadcastList")); n != want {
		t.Errorf("the generated template names BroadcastCount %d times, BroadcastList %d times: a piece of the new tool is not generated", n, want)
	}
	for _, piece := range []string{
		"broadcast_count=${BroadcastCountFunction}", "broadcast_count=${BroadcastCountCallKey}",
		"  BroadcastCountFunction:", "  BroadcastCountCallKey:", "  BroadcastCountCallKeyPolicy:",
		"  BroadcastCountGatewayPermission:", "  BroadcastCountAgentCorePermission:",
		"  BroadcastCountAgentCoreGatewayPermission:", "  BroadcastCountAgentCoreTarget:",
		"  BroadcastCountFunctionArn:",
	} {
		if !bytes.Contains(generated, []byte(piece)) {
			t.Errorf("the generated template lacks %q", piece)
		}
	}
	tpl, err := samtemplate.Parse(generated)
	if err != nil {
		t.Fatal(err)
	}
	fn, ok := tpl.Resource("BroadcastCountFunction")
	if !ok {
		t.Fatal("no BroadcastCountFunction")
	}
	want := declaredGrants(e.Tool)
	for _, g := range slices.Concat(auditGrant("broadcast_count"), taskGrant("broadcast_count", false), payloadGrant("broadcast_count"), []string{ownKey("BroadcastCount")}) {
		want[g] = true
	}
	if got := grants(t, fn.LogicalID, fn.Properties); !maps.Equal(got, want) {
		t.Errorf("BroadcastCountFunction grants %v, want %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
	if !want["dynamodb:Query on BroadcastsTable/index/byChannel"] {
		t.Errorf("the declaration's access %v is not the channel index's", e.Tool.Tables)
	}

	event, err := os.ReadFile(filepath.Join(dir, eventsDir, "broadcast_count.json"))
	if err != nil {
		t.Fatal(err)
	}
	checkEventReachesTheHandler(t, declaredTool(t, e), event, nil)

	if stdout, stderr, err := runMcpfn(t, dir, cache, "template", "-check", "-no-validate"); err != nil {
		t.Errorf("mcpfn template -check after mcpfn template: %v\n%s%s", err, stdout, stderr)
	}
	stdout, stderr, err = runMcpfn(t, dir, cache, "template")
	if err != nil || strings.Contains(stdout, "wrote") {
		t.Errorf("a second mcpfn template: %v\n%s%s", err, stdout, stderr)
	}
	// The guide's test compiles against the tool it tests.
	vet := exec.Command("go", "vet", "./handlers/")
	vet.Dir = dir
	if out, err := vet.CombinedOutput(); err != nil {
		t.Errorf("go vet ./handlers/ with the guide's test: %v\n%s", err, out)
	}
}

// copyRepository copies this repository's files into a temporary
// directory — the module, its template, catalog and events; not .git, the
// npm packages or build outputs — and returns it.
func copyRepository(t *testing.T) string {
	t.Helper()
	root := repoRoot(t)
	dst := t.TempDir()
	skip := map[string]bool{"node_modules": true, "bin": true}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if rel != "." && (strings.HasPrefix(d.Name(), ".") || skip[d.Name()]) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}
