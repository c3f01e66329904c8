package templatetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

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

// tableInput is the table resource id of template.yaml as the
// CreateTableInput that samtemplate builds from it (what the handler and
// taskstore tests create in DynamoDB Local): keys, attributes, billing and
// indexes as DynamoDB reads them.
func tableInput(t *testing.T, id string) *dynamodb.CreateTableInput {
	t.Helper()
	in, err := raw(t).TableInput(id, id)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// keysOf spells a key schema as "name/HASH name/RANGE".
func keysOf(ks []types.KeySchemaElement) string {
	var keys []string
	for _, k := range ks {
		keys = append(keys, aws.ToString(k.AttributeName)+"/"+string(k.KeyType))
	}
	return strings.Join(keys, " ")
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
