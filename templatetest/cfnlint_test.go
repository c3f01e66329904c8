package templatetest

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// TestCfnLint runs cfn-lint, which applies the SAM transform and checks the
// result against the CloudFormation resource specifications — property
// names and types these tests do not know. It is skipped where cfn-lint is
// not installed.
func TestCfnLint(t *testing.T) {
	lint, err := exec.LookPath("cfn-lint")
	if err != nil {
		t.Skip("cfn-lint not installed (pip install cfn-lint)")
	}
	cmd := exec.Command(lint, filepath.Join(repoRoot(t), "template.yaml"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cfn-lint: %v\n%s", err, out)
	}
}
