//go:build !mcpfn_otel

package adapter_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
)

// A function built without the tag mcpfn_otel (the default) and configured
// with MCPFN_TRACING=otel stops at start with a line naming the tag,
// before it takes any call, instead of running without the spans it was
// asked for. The test runs Start in a child process (this test binary).
func TestStartRefusesOTelWithoutTheTag(t *testing.T) {
	if os.Getenv("MCPFN_TEST_START_CHILD") == "1" {
		adapter.Start(askName(t)) // exits
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestStartRefusesOTelWithoutTheTag$")
	cmd.Env = []string{
		"MCPFN_TEST_START_CHILD=1", "PATH=" + os.Getenv("PATH"),
		audit.EnvTable + "=audit", audit.EnvTracing + "=otel",
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=x", "AWS_SECRET_ACCESS_KEY=x",
		"AWS_CONFIG_FILE=" + os.DevNull, "AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull, "AWS_EC2_METADATA_DISABLED=true",
		// Were it to get past its configuration, a runtime API nobody
		// serves: lambda.Start fails rather than waiting.
		"AWS_LAMBDA_RUNTIME_API=127.0.0.1:1",
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("Start: %v, want exit status 1", err)
	}
	if !strings.Contains(stderr.String(), "mcpfn: audit configuration: ") || !strings.Contains(stderr.String(), "-tags mcpfn_otel") {
		t.Errorf("stderr %q: want the audit configuration error naming -tags mcpfn_otel", stderr.String())
	}
}
