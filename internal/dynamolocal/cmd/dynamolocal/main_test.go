package main

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	// Child mode: be the command itself, with the arguments the test gave.
	if os.Getenv("DYNAMOLOCAL_CMD_CHILD") == "1" {
		main()
	}
	os.Exit(m.Run())
}

// The wrapper gives the command the endpoint, passes its exit status through
// and leaves no emulator behind.
func TestRunsCommandWithEndpoint(t *testing.T) {
	if _, err := exec.LookPath("java"); err != nil {
		t.Skip(err)
	}
	cmd := exec.Command(os.Args[0], "--", "sh", "-c", `echo "got=$MCPFN_DYNAMODB_ENDPOINT"; exit 7`)
	cmd.Env = append(os.Environ(), "DYNAMOLOCAL_CMD_CHILD=1", "MCPFN_DYNAMODB_ENDPOINT=")
	out, err := cmd.Output()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 7 {
		t.Fatalf("exit = %v, want status 7; stderr:\n%s", err, stderrOf(err))
	}
	if !strings.HasPrefix(string(out), "got=http://127.0.0.1:") {
		t.Fatalf("command saw %q, want the emulator's endpoint", out)
	}
}

func stderrOf(err error) string {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(exit.Stderr)
	}
	return ""
}
