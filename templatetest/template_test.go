package templatetest

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mcpfn/mcpfn/catalog"
	"github.com/mcpfn/mcpfn/internal/samgen"
	"github.com/mcpfn/mcpfn/internal/samtemplate"
)

const serverlessFunction = samtemplate.TypeServerlessFunction

// skeletonFunctions are the functions of mcpfn's skeleton, built by `mcpfn
// build` from mcpfn's own commands with the catalog file beside the
// bootstrap; every other function of the template is a tool's.
var skeletonFunctions = map[string]string{
	"GatewayFunction":              "cmd/mcpfn-gateway",
	"AgentCoreInterceptorFunction": "cmd/mcpfn-interceptor",
}

// TestEveryFunctionHasItsCode: every function of template.yaml is one
// `mcpfn build <LogicalId>` (sam build's glue) can build — a catalog
// tool's, from its functions/<tool>/main.go, or the skeleton's, from
// mcpfn's own command — and every functions/<dir>/main.go is a catalog
// tool's. (TestMcpfnBuildProducesArm64Bootstraps builds them all.)
func TestEveryFunctionHasItsCode(t *testing.T) {
	root := repoRoot(t)
	code := map[string]string{} // logical id → main package
	for id, pkg := range skeletonFunctions {
		code[id] = pkg
	}
	for _, e := range repoCatalog(t).Tools {
		if _, dup := code[e.Function]; dup {
			t.Errorf("tool %s's function %s is also another's", e.Tool.Name, e.Function)
		}
		code[e.Function] = strings.TrimPrefix(e.Package, "./")
	}
	for _, id := range raw(t).LogicalIDs(serverlessFunction) {
		pkg, ok := code[id]
		if !ok {
			t.Errorf("function %s is neither a catalog tool's nor mcpfn's: `mcpfn build %s` would look for functions/<its name in snake case>", id, id)
			continue
		}
		if _, err := os.Stat(filepath.Join(root, pkg, "main.go")); err != nil {
			t.Errorf("function %s: no %s/main.go", id, pkg)
		}
		delete(code, id)
	}
	for id, pkg := range code {
		t.Errorf("%s (%s) has no function in template.yaml: run `mcpfn template`", id, pkg)
	}
	tools := map[string]bool{}
	for _, e := range repoCatalog(t).Tools {
		tools[e.Tool.Name] = true
	}
	for _, dir := range functionDirs(t) {
		if !tools[dir] {
			t.Errorf("functions/%s/main.go serves no catalog tool: run `mcpfn template`", dir)
		}
	}
}

// TestEveryToolHasAFunction: each tool of the catalog is served by its own
// function (functions/<tool>), which gets the tables its declaration names,
// and the gateway forwards the tool to that function.
func TestEveryToolHasAFunction(t *testing.T) {
	for _, gap := range toolGaps(t, repoCatalog(t)) {
		t.Error(gap)
	}
}

// TestANewToolWithoutItsPiecesFails: a tool in the catalog with no main.go
// and no template function yet is refused, each missing piece named with
// what to do.
func TestANewToolWithoutItsPiecesFails(t *testing.T) {
	cat := repoCatalog(t)
	count, ok := cat.Entry("broadcast_list")
	if !ok {
		t.Fatal("no broadcast_list in the catalog")
	}
	count.Tool.Name, count.Function, count.Package = "broadcast_count", catalog.FunctionID("broadcast_count"), "./functions/broadcast_count"
	cat.Tools = append(cat.Tools, count)
	gaps := strings.Join(toolGaps(t, cat), "\n")
	for _, want := range []string{
		"tool broadcast_count: no functions/broadcast_count/main.go",
		"tool broadcast_count: template.yaml has no AWS::Serverless::Function BroadcastCountFunction: run `mcpfn template`",
	} {
		if !strings.Contains(gaps, want) {
			t.Errorf("the gaps of a new tool\n%s\ndo not say\n%s", gaps, want)
		}
	}
	if strings.Contains(gaps, "broadcast_get") {
		t.Errorf("gaps name a complete tool:\n%s", gaps)
	}
}

// toolGaps lists what the catalog's tools lack in functions/ and
// template.yaml, each with what to do.
func toolGaps(t *testing.T, cat *catalog.File) []string {
	t.Helper()
	rt := raw(t)
	forwards := gatewayToolFunctions(t)
	var gaps []string
	tools := map[string]bool{}
	for _, e := range cat.Tools {
		name := e.Tool.Name
		tools[name] = true
		if e.Package != "./functions/"+name {
			gaps = append(gaps, fmt.Sprintf("tool %s: its package is %s, want ./functions/%s", name, e.Package, name))
		}
		if _, err := os.Stat(filepath.Join(repoRoot(t), "functions", name, "main.go")); err != nil {
			gaps = append(gaps, fmt.Sprintf("tool %s: no functions/%s/main.go: its function's main serves the tool's declaration (adapter.Serve)", name, name))
		}
		if e.Function != catalog.FunctionID(name) {
			gaps = append(gaps, fmt.Sprintf("tool %s: its function is %s, want %s", name, e.Function, catalog.FunctionID(name)))
		}
		res, ok := rt.Resource(e.Function)
		if !ok || res.Type != serverlessFunction {
			gaps = append(gaps, fmt.Sprintf("tool %s: template.yaml has no %s %s: run `mcpfn template`", name, serverlessFunction, e.Function))
			continue
		}
		if fn, ok := forwards[name]; !ok || fn != e.Function {
			gaps = append(gaps, fmt.Sprintf("tool %s: the gateway forwards it to %q, want %s: run `mcpfn template`", name, fn, e.Function))
		}
		env := envOf(res.Properties)
		for _, ta := range e.Tool.Tables {
			if ref(env[ta.Env]) != ta.Table {
				gaps = append(gaps, fmt.Sprintf("tool %s: %s is %v, want !Ref %s", name, ta.Env, env[ta.Env], ta.Table))
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(forwards)) {
		if !tools[name] {
			gaps = append(gaps, fmt.Sprintf("the gateway forwards %s to %s, but the catalog declares no such tool", name, forwards[name]))
		}
	}
	return gaps
}

// gatewayToolFunctions parses GatewayFunction's MCPFN_TOOL_FUNCTIONS
// (!Sub "tool=${LogicalId},…") into tool → logical id.
func gatewayToolFunctions(t *testing.T) map[string]string {
	t.Helper()
	res, ok := raw(t).Resource("GatewayFunction")
	if !ok {
		t.Fatal("no GatewayFunction")
	}
	v := envOf(res.Properties)["MCPFN_TOOL_FUNCTIONS"]
	fn, arg := intrinsic(v)
	s, _ := arg.(string)
	if fn != "Fn::Sub" || s == "" {
		t.Fatalf("MCPFN_TOOL_FUNCTIONS is %v, want a !Sub string", v)
	}
	out := map[string]string{}
	for pair := range strings.SplitSeq(strings.TrimSpace(s), ",") {
		tool, fnRef, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok || !strings.HasPrefix(fnRef, "${") || !strings.HasSuffix(fnRef, "}") {
			t.Fatalf("MCPFN_TOOL_FUNCTIONS entry %q is not tool=${LogicalId}", pair)
		}
		out[tool] = strings.TrimSuffix(strings.TrimPrefix(fnRef, "${"), "}")
	}
	return out
}

func envOf(props map[string]any) map[string]any {
	env, _ := props["Environment"].(map[string]any)
	vars, _ := env["Variables"].(map[string]any)
	return vars
}

// TestFunctionRuntimeSettings checks each function's settings for what
// `mcpfn build` builds and the adapter expects. There are no Globals: each
// function states every property itself, so what a function gets is
// readable at the function. A tool function's timeout and memory are its
// declaration's.
func TestFunctionRuntimeSettings(t *testing.T) {
	rt := raw(t)
	if rt.Globals != nil {
		t.Errorf("template.yaml has Globals %v: every generated function states its properties", rt.Globals)
	}
	want := map[string]any{
		"Runtime":       "provided.al2023",
		"Handler":       "bootstrap",
		"Architectures": []any{"arm64"},
		"Tracing":       "Active",
		"CodeUri":       ".",
	}
	declared := map[string]catalog.Entry{}
	for _, e := range repoCatalog(t).Tools {
		declared[e.Function] = e
	}
	for id, res := range rt.Resources(serverlessFunction) {
		for key, w := range want {
			if got := res.Properties[key]; fmt.Sprint(got) != fmt.Sprint(w) {
				t.Errorf("%s: %s = %v, want %v", id, key, got, w)
			}
		}
		if lf := dig(res.Properties, "LoggingConfig", "LogFormat"); lf != "JSON" {
			t.Errorf("%s: LoggingConfig.LogFormat = %v, want JSON", id, lf)
		}
		if bm := dig(res.Attributes, "Metadata", "BuildMethod"); bm != "makefile" {
			t.Errorf("%s: Metadata.BuildMethod = %v, want makefile", id, bm)
		}
		env := envOf(res.Properties)
		for _, c := range samgen.CommonEnvironment {
			if ref(env[c.Name]) != c.Ref {
				t.Errorf("%s: %s = %v, want !Ref %s", id, c.Name, env[c.Name], c.Ref)
			}
		}
		if e, ok := declared[id]; ok {
			if res.Properties["Timeout"] != e.Tool.TimeoutSeconds || res.Properties["MemorySize"] != e.Tool.MemoryMB {
				t.Errorf("%s: Timeout %v, MemorySize %v; %s declares %d s, %d MB", id, res.Properties["Timeout"], res.Properties["MemorySize"], e.Tool.Name, e.Tool.TimeoutSeconds, e.Tool.MemoryMB)
			}
		}
	}
}

func TestParametersHaveDefaults(t *testing.T) {
	for name, decl := range raw(t).Parameters {
		if _, ok := decl["Default"]; !ok {
			t.Errorf("parameter %s has no Default: `sam deploy` would prompt or fail", name)
		}
	}
}

func TestOutputs(t *testing.T) {
	rt := raw(t)
	want := []string{"McpUrl", "BroadcastsTableName", "AuditTableName", "GatewayFunctionArn"}
	for id := range rt.Resources(serverlessFunction) {
		want = append(want, id+"Arn")
	}
	for _, name := range want {
		if _, ok := rt.Outputs[name]; !ok {
			t.Errorf("no output %s", name)
		}
	}
	out, _ := rt.Outputs["McpUrl"].(map[string]any)
	fn, arg := intrinsic(out["Value"])
	if s, _ := arg.(string); fn != "Fn::Sub" || !strings.Contains(s, "${GatewayFunctionUrl.FunctionUrl}") {
		t.Errorf("McpUrl = %v, want the gateway's Function URL", out["Value"])
	}
}

// TestFunctionURL: the gateway is the only function with a URL, and its auth
// type follows AuthMode: AWS_IAM for iam, NONE (the gateway verifies a JWT,
// or runs unauthenticated by explicit choice) otherwise.
func TestFunctionURL(t *testing.T) {
	rt := raw(t)
	for id, res := range rt.Resources(serverlessFunction) {
		cfg, has := res.Properties["FunctionUrlConfig"].(map[string]any)
		if id != "GatewayFunction" {
			if has {
				t.Errorf("%s has a Function URL; tools are reached through the gateway only", id)
			}
			continue
		}
		if !has {
			t.Fatal("GatewayFunction has no FunctionUrlConfig")
		}
		fn, arg := intrinsic(cfg["AuthType"])
		args, _ := arg.([]any)
		if fn != "Fn::If" || len(args) != 3 || args[0] != "UseIamAuth" || args[1] != "AWS_IAM" || args[2] != "NONE" {
			t.Errorf("AuthType = %v, want !If [UseIamAuth, AWS_IAM, NONE]", cfg["AuthType"])
		}
	}
	p := rt.Parameters["AuthMode"]
	if fmt.Sprint(p["AllowedValues"]) != "[iam jwt none]" {
		t.Errorf("AuthMode AllowedValues = %v", p["AllowedValues"])
	}
	env := envOf(mustResource(t, "GatewayFunction").Properties)
	for key, param := range map[string]string{"MCPFN_AUTH_MODE": "AuthMode", "MCPFN_JWT_ISSUER": "JwtIssuer", "MCPFN_JWT_AUDIENCE": "JwtAudience"} {
		if ref(env[key]) != param {
			t.Errorf("gateway %s = %v, want !Ref %s", key, env[key], param)
		}
	}
}

func mustResource(t *testing.T, id string) samtemplate.Resource {
	t.Helper()
	r, ok := raw(t).Resource(id)
	if !ok {
		t.Fatalf("no resource %s", id)
	}
	return r
}

// TestDeclaredTablesAreTheProjects: every table a tool declares is a
// DynamoDB table of the project's own, outside mcpfn's regions (mcpfn's
// audit and tasks tables are reached through its adapter, never declared),
// and every index a tool declares is one of the table's.
func TestDeclaredTablesAreTheProjects(t *testing.T) {
	rt := raw(t)
	src, err := os.ReadFile(filepath.Join(repoRoot(t), "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	generated, err := samgen.GeneratedResources(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range repoCatalog(t).Tools {
		for _, ta := range e.Tool.Tables {
			r, ok := rt.Resource(ta.Table)
			if !ok || r.Type != samtemplate.TypeDynamoDBTable {
				t.Errorf("tool %s declares table %s, which is no AWS::DynamoDB::Table of template.yaml", e.Tool.Name, ta.Table)
				continue
			}
			if region, ok := generated[ta.Table]; ok {
				t.Errorf("tool %s declares %s, which mcpfn's region %q defines", e.Tool.Name, ta.Table, region)
			}
			if ta.Index != "" && !slices.Contains(indexNames(r), ta.Index) {
				t.Errorf("tool %s declares index %s of %s, which has %v", e.Tool.Name, ta.Index, ta.Table, indexNames(r))
			}
		}
	}
}

func indexNames(table samtemplate.Resource) []string {
	var out []string
	for _, key := range []string{"GlobalSecondaryIndexes", "LocalSecondaryIndexes"} {
		for _, ix := range list(table.Properties[key]) {
			if n, ok := dig(ix, "IndexName").(string); ok {
				out = append(out, n)
			}
		}
	}
	return out
}

// TestBroadcastsTableServesTheStore: the index the demo's list tool
// declares exists with the keys the store pages by. (The handler tests
// create their table from this definition, so the rest is exercised there.)
func TestBroadcastsTableServesTheStore(t *testing.T) {
	list, ok := repoCatalog(t).Entry("broadcast_list")
	if !ok || len(list.Tool.Tables) != 1 || list.Tool.Tables[0].Index == "" {
		t.Fatalf("broadcast_list declares %v, want one index of BroadcastsTable", list.Tool.Tables)
	}
	index := list.Tool.Tables[0].Index
	table := tableInput(t, "BroadcastsTable")
	if keys := keysOf(table.KeySchema); keys != "id/HASH" {
		t.Errorf("key schema %s, want id/HASH", keys)
	}
	found := false
	for _, g := range table.GlobalSecondaryIndexes {
		if aws.ToString(g.IndexName) != index {
			continue
		}
		found = true
		if keys := keysOf(g.KeySchema); keys != "channel/HASH createdAt/RANGE" {
			t.Errorf("%s keys %s", index, keys)
		}
		if g.Projection == nil || g.Projection.ProjectionType != types.ProjectionTypeAll {
			t.Errorf("%s must project ALL: list returns whole broadcasts from the index", index)
		}
	}
	if !found {
		t.Errorf("BroadcastsTable has no index %s", index)
	}
}
