package mcpfntest_test

import (
	"flag"
	"os"
	"os/exec"
	"testing"

	"github.com/mcpfn/mcpfn/mcpfntest"
)

func TestMain(m *testing.M) {
	// A test without DynamoDB Local skips; an example cannot, so without
	// Java or an endpoint the example that needs one is left out (under
	// CI=true, as the tests do, it fails instead).
	if _, err := exec.LookPath("java"); err != nil && os.Getenv("MCPFN_DYNAMODB_ENDPOINT") == "" && os.Getenv("CI") != "true" {
		flag.Parse()
		skip := flag.Lookup("test.skip")
		pattern := "^ExampleDB_Table$"
		if s := skip.Value.String(); s != "" {
			pattern = s + "|" + pattern
		}
		_ = skip.Value.Set(pattern)
	}
	mcpfntest.Main(m)
}
