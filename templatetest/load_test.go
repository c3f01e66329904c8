package templatetest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/awslabs/goformation/v7"
	"github.com/awslabs/goformation/v7/cloudformation"
	"github.com/awslabs/goformation/v7/intrinsics"
	"gopkg.in/yaml.v3"

	"github.com/mcpfn/mcpfn/internal/samtemplate"
)

// repoRoot is the directory holding go.mod: the tests run in templatetest/.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// keepIntrinsic renders an intrinsic as a string such as
// `Fn::GetAtt(["BroadcastsTable","Arn"])` instead of resolving it:
// goformation would otherwise replace a !Ref to a parameter with its default
// (a number where a string is typed) and a !GetAtt with nothing.
func keepIntrinsic(name string, input any, _ any) any {
	b, _ := json.Marshal(input)
	return name + "(" + string(b) + ")"
}

// typed parses template.yaml with goformation.
func typed(t *testing.T) *cloudformation.Template {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	overrides := map[string]intrinsics.IntrinsicHandler{}
	for _, fn := range []string{"Ref", "Fn::GetAtt", "Fn::Sub", "Fn::If", "Fn::Join", "Fn::Select", "Fn::ImportValue"} {
		overrides[fn] = keepIntrinsic
	}
	// goformation does not know every resource type the template uses;
	// those are checked on the raw template (agentcore_test.go).
	data = withoutResourceTypes(t, data, "AWS::BedrockAgentCore::")
	tpl, err := goformation.ParseYAMLWithOptions(data, &intrinsics.ProcessorOptions{IntrinsicHandlerOverrides: overrides})
	if err != nil {
		t.Fatalf("goformation cannot parse template.yaml: %v", err)
	}
	return tpl
}

// withoutResourceTypes drops the resources whose type starts with prefix.
func withoutResourceTypes(t *testing.T, data []byte, prefix string) []byte {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 {
		t.Fatalf("template.yaml is not YAML: %v", err)
	}
	top := doc.Content[0]
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value != "Resources" {
			continue
		}
		res := top.Content[i+1]
		var kept []*yaml.Node
		for j := 0; j+1 < len(res.Content); j += 2 {
			body := res.Content[j+1]
			drop := false
			for k := 0; k+1 < len(body.Content); k += 2 {
				if body.Content[k].Value == "Type" && strings.HasPrefix(body.Content[k+1].Value, prefix) {
					drop = true
				}
			}
			if !drop {
				kept = append(kept, res.Content[j], body)
			}
		}
		res.Content = kept
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// raw reads template.yaml with intrinsics intact.
func raw(t *testing.T) *samtemplate.Template {
	t.Helper()
	tpl, err := samtemplate.Load(filepath.Join(repoRoot(t), "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

// functionDirs lists functions/<name> directories that hold a main.go.
func functionDirs(t *testing.T) []string {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(repoRoot(t), "functions", "*", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, m := range matches {
		dirs = append(dirs, filepath.Base(filepath.Dir(m)))
	}
	sort.Strings(dirs)
	return dirs
}

// builtDir matches the package a `make -n build-<LogicalId>` recipe builds.
var builtDir = regexp.MustCompile(`\./functions/([a-z0-9_]+)\s*$`)

// samBuilds asks make which functions/ directory `make build-<LogicalId>`
// (what `sam build` runs for a function with BuildMethod makefile) builds,
// for every function of template.yaml: logical id → directory. make -n
// prints the recipe without running it. A function make cannot build maps
// to "" and its reason is reported.
func samBuilds(t *testing.T) map[string]string {
	t.Helper()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make not installed")
	}
	out := map[string]string{}
	for _, id := range raw(t).LogicalIDs(serverlessFunction) {
		cmd := exec.Command("make", "-n", "--no-print-directory", "build-"+id, "ARTIFACTS_DIR=/artifacts")
		cmd.Dir = repoRoot(t)
		recipe, err := cmd.CombinedOutput()
		m := builtDir.FindStringSubmatch(strings.TrimSpace(string(recipe)))
		if err != nil || m == nil {
			t.Errorf("function %s: `make build-%s` (what sam build runs) builds no functions/<dir>: %v\n%s", id, id, err, recipe)
			out[id] = ""
			continue
		}
		out[id] = m[1]
	}
	return out
}

// intrinsic returns v's intrinsic function and argument (long form).
func intrinsic(v any) (string, any) {
	fn, arg, _ := samtemplate.Intrinsic(v)
	return fn, arg
}

// getAtt returns "X.Attr" for {"Fn::GetAtt": ["X", "Attr"]}, else "".
func getAtt(v any) string {
	fn, arg := intrinsic(v)
	if fn != "Fn::GetAtt" {
		return ""
	}
	switch a := arg.(type) {
	case []any:
		if len(a) == 2 {
			x, _ := a[0].(string)
			y, _ := a[1].(string)
			return x + "." + y
		}
	case string:
		return a
	}
	return ""
}

// ref returns X for {"Ref": "X"}, else "".
func ref(v any) string {
	if fn, arg := intrinsic(v); fn == "Ref" {
		s, _ := arg.(string)
		return s
	}
	return ""
}

// list returns v as a list of values: a scalar is a list of one.
func list(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	if v == nil {
		return nil
	}
	return []any{v}
}
