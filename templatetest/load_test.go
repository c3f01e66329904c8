package templatetest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mcpfn/mcpfn/catalog"
	"github.com/mcpfn/mcpfn/internal/samtemplate"
)

// TestMain removes the mcpfn command the tests build (mcpfnCommand).
func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

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

// tableInput is table resource id of template.yaml as the CreateTableInput
// samtemplate builds from it (what the handler and taskstore tests create
// in DynamoDB Local): keys, attributes, billing and indexes as DynamoDB
// reads them.
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

// repoCatalog reads the project's catalog file, mcpfn-tools.json, as
// `mcpfn template` wrote it from the tool functions' declarations (that it
// is current is TestTemplateIsGenerated's).
func repoCatalog(t *testing.T) *catalog.File {
	t.Helper()
	f, err := catalog.Load(filepath.Join(repoRoot(t), catalog.FileName))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

var (
	buildOnce sync.Once
	binDir    string // where mcpfnCommand builds; TestMain removes it
	mcpfnBin  string
	buildErr  error
)

// mcpfnCommand builds cmd/mcpfn from this tree, once per test binary, and
// returns its path: the tests run the command a project runs.
func mcpfnCommand(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "mcpfn-templatetest-"); buildErr != nil {
			return
		}
		mcpfnBin = filepath.Join(binDir, "mcpfn")
		cmd := exec.Command("go", "build", "-o", mcpfnBin, "./cmd/mcpfn")
		cmd.Dir = repoRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = &buildError{err, out}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return mcpfnBin
}

type buildError struct {
	err error
	out []byte
}

func (e *buildError) Error() string {
	return "go build ./cmd/mcpfn: " + e.err.Error() + "\n" + string(e.out)
}

// runMcpfn runs the mcpfn command in dir with env added to the
// environment; its per-user cache is a temporary directory, so a run
// builds nothing into the developer's cache.
func runMcpfn(t *testing.T, dir string, env []string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := exec.Command(mcpfnCommand(t), args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "MCPFN_CACHE_DIR="+t.TempDir()), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
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
