package templatetest

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// TestSamconfig: the tables `sam build`, `sam deploy` and `sam local` read
// exist, and deploy overrides only parameters the template declares.
func TestSamconfig(t *testing.T) {
	var cfg map[string]map[string]map[string]map[string]any
	if _, err := toml.DecodeFile(filepath.Join(repoRoot(t), "samconfig.toml"), &cfg); err != nil {
		t.Fatal(err)
	}
	def := cfg["default"]
	for _, cmd := range []string{"global", "build", "deploy", "local_start_lambda", "local_invoke"} {
		if def[cmd]["parameters"] == nil {
			t.Errorf("samconfig.toml has no [default.%s.parameters]", cmd)
		}
	}
	build := def["build"]["parameters"]
	if build["cached"] != true || build["parallel"] != true {
		t.Errorf("build parameters %v: want cached and parallel", build)
	}
	deploy := def["deploy"]["parameters"]
	for _, key := range []string{"capabilities", "resolve_s3", "confirm_changeset", "parameter_overrides"} {
		if _, ok := deploy[key]; !ok {
			t.Errorf("deploy parameters lack %s", key)
		}
	}
	if def["global"]["parameters"]["stack_name"] == nil {
		t.Error("no stack_name")
	}
	overrides, _ := deploy["parameter_overrides"].(string)
	params := raw(t).Parameters
	for field := range strings.FieldsSeq(overrides) {
		name, _, _ := strings.Cut(field, "=")
		if _, ok := params[name]; !ok {
			t.Errorf("parameter_overrides sets %s, which template.yaml does not declare", name)
		}
	}
}
