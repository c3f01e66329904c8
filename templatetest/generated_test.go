package templatetest

import (
	"strings"
	"testing"
)

// TestTemplateIsGenerated: `mcpfn template -check` passes on this
// repository, as it must in any project before a commit: template.yaml's
// mcpfn regions and mcpfn-tools.json are what the tool functions'
// declarations generate (a declaration changed without `mcpfn template`, or
// a region edited by hand, fails with the diff), no resource outside the
// regions widens a generated role, function or key, and every tool has its
// events/<tool>.json. The command builds every tool function for this
// machine and asks each for its declaration, as a project's developer runs it.
func TestTemplateIsGenerated(t *testing.T) {
	// The validator itself runs in TestCloudFormationValidate.
	stdout, stderr, err := runMcpfn(t, repoRoot(t), nil, "template", "-check", "-no-validate")
	if err != nil {
		t.Fatalf("mcpfn template -check: %v\n%s\n%s\nrun `go run ./cmd/mcpfn template` and review the diff", err, stdout, stderr)
	}
	if !strings.Contains(stdout, "are current") {
		t.Errorf("mcpfn template -check said\n%s", stdout)
	}
}
