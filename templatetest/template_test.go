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

	"github.com/mcpfn/mcpfn/handlers"
	"github.com/mcpfn/mcpfn/internal/gentemplate"
	"github.com/mcpfn/mcpfn/internal/samtemplate"
)

const serverlessFunction = "AWS::Serverless::Function"

// TestFunctionsResourcesAndBuildTargetsMatch: every function of
// template.yaml is built by `make build-<LogicalId>` (what sam build runs)
// from a functions/<dir> of its own, and every functions/<dir> is some
// function's.
func TestFunctionsResourcesAndBuildTargetsMatch(t *testing.T) {
	dirs := functionDirs(t)
	built := map[string]string{} // dir → logical id
	for id, dir := range samBuilds(t) {
		if dir == "" {
			continue // samBuilds reported it
		}
		if !slices.Contains(dirs, dir) {
			t.Errorf("build-%s builds functions/%s, which has no main.go", id, dir)
		}
		if other, dup := built[dir]; dup {
			t.Errorf("functions/%s is built by both build-%s and build-%s", dir, other, id)
		}
		built[dir] = id
	}
	for _, dir := range dirs {
		if _, ok := built[dir]; !ok {
			t.Errorf("functions/%s/main.go is no function's: add its %s resource to template.yaml (docs/guide/write-a-tool.md, step 3)", dir, serverlessFunction)
		}
	}
}

// TestEveryToolHasAFunction: each tool of the catalog is served by its own
// function (functions/<tool>), which gets the data table, and the gateway
// forwards the tool to that function.
func TestEveryToolHasAFunction(t *testing.T) {
	var names []string
	for _, tool := range handlers.Catalog() {
		names = append(names, tool.Name())
	}
	for _, gap := range toolGaps(t, names) {
		t.Error(gap)
	}
}

// TestANewToolWithoutItsPiecesFails: a tool declared in the catalog but with
// no main.go and no template resource yet is refused, each missing piece
// named with where it goes.
func TestANewToolWithoutItsPiecesFails(t *testing.T) {
	var names []string
	for _, tool := range handlers.Catalog() {
		names = append(names, tool.Name())
	}
	gaps := strings.Join(toolGaps(t, append(names, "broadcast_count")), "\n")
	for _, want := range []string{
		"tool broadcast_count: no functions/broadcast_count/main.go",
		"tool broadcast_count: the gateway does not forward it: template.yaml needs an AWS::Serverless::Function BroadcastCountFunction (docs/guide/write-a-tool.md, step 3), then `make template`",
	} {
		if !strings.Contains(gaps, want) {
			t.Errorf("the gaps of a new tool\n%s\ndo not say\n%s", gaps, want)
		}
	}
	if strings.Contains(gaps, "broadcast_get") {
		t.Errorf("gaps name a complete tool:\n%s", gaps)
	}
}

// toolGaps lists what the catalog's tools (named) lack in functions/,
// template.yaml and the Makefile, each with where to add it.
func toolGaps(t *testing.T, tools []string) []string {
	t.Helper()
	rt := raw(t)
	builds := samBuilds(t)
	forwards := gatewayToolFunctions(t)
	var gaps []string
	for _, name := range tools {
		if _, err := os.Stat(filepath.Join(repoRoot(t), "functions", name, "main.go")); err != nil {
			gaps = append(gaps, fmt.Sprintf("tool %s: no functions/%s/main.go: its function's main binds the tool (docs/guide/write-a-tool.md, step 2)", name, name))
		}
		id, ok := forwards[name]
		if !ok {
			want := gentemplate.FunctionID(name)
			if _, written := rt.Resource(want); !written {
				gaps = append(gaps, fmt.Sprintf("tool %s: the gateway does not forward it: template.yaml needs an %s %s (docs/guide/write-a-tool.md, step 3), then `make template`", name, serverlessFunction, want))
				continue
			}
			gaps = append(gaps, fmt.Sprintf("tool %s: the gateway does not forward it to %s: run `make template`", name, want))
			continue
		}
		res, ok := rt.Resource(id)
		if !ok || res.Type != serverlessFunction {
			gaps = append(gaps, fmt.Sprintf("tool %s: the gateway forwards it to %s, which is not an %s in template.yaml", name, id, serverlessFunction))
			continue
		}
		if dir := builds[id]; dir != name {
			gaps = append(gaps, fmt.Sprintf("tool %s: its function %s builds functions/%s, want functions/%s", name, id, dir, name))
		}
		env := envOf(res.Properties)
		if ref(env[handlers.TableEnv]) != "BroadcastsTable" {
			gaps = append(gaps, fmt.Sprintf("tool %s: %s is %v, want !Ref BroadcastsTable", name, handlers.TableEnv, env[handlers.TableEnv]))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(forwards)) {
		if !slices.Contains(tools, name) {
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

// TestFunctionRuntimeSettings checks each function's effective settings (its
// own property, else Globals) for what the Makefile builds and the adapter
// expects.
func TestFunctionRuntimeSettings(t *testing.T) {
	rt := raw(t)
	globals, _ := rt.Globals["Function"].(map[string]any)
	want := map[string]any{
		"Runtime":       "provided.al2023",
		"Handler":       "bootstrap",
		"Architectures": []any{"arm64"},
		"Tracing":       "Active",
		"CodeUri":       ".",
	}
	for id, res := range rt.Resources(serverlessFunction) {
		effective := func(key string) any {
			if v, ok := res.Properties[key]; ok {
				return v
			}
			return globals[key]
		}
		for key, w := range want {
			if got := effective(key); fmt.Sprint(got) != fmt.Sprint(w) {
				t.Errorf("%s: %s = %v, want %v", id, key, got, w)
			}
		}
		lc, _ := effective("LoggingConfig").(map[string]any)
		if lc["LogFormat"] != "JSON" {
			t.Errorf("%s: LoggingConfig.LogFormat = %v, want JSON", id, lc["LogFormat"])
		}
		md, _ := res.Attributes["Metadata"].(map[string]any)
		if md["BuildMethod"] != "makefile" {
			t.Errorf("%s: Metadata.BuildMethod = %v, want makefile", id, md["BuildMethod"])
		}
		env := envOf(globals)
		if ref(env["MCPFN_AUDIT_TABLE"]) != "AuditTable" {
			t.Errorf("Globals: MCPFN_AUDIT_TABLE = %v, want !Ref AuditTable", env["MCPFN_AUDIT_TABLE"])
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

// TestBroadcastsTableServesTheStore: the index the store queries exists
// with the keys it pages by. (The handler tests create their table from
// this definition, so the rest is exercised there.)
func TestBroadcastsTableServesTheStore(t *testing.T) {
	table := tableInput(t, "BroadcastsTable")
	if keys := keysOf(table.KeySchema); keys != "id/HASH" {
		t.Errorf("key schema %s, want id/HASH", keys)
	}
	found := false
	for _, g := range table.GlobalSecondaryIndexes {
		if aws.ToString(g.IndexName) != handlers.ChannelIndex {
			continue
		}
		found = true
		if keys := keysOf(g.KeySchema); keys != "channel/HASH createdAt/RANGE" {
			t.Errorf("%s keys %s", handlers.ChannelIndex, keys)
		}
		if g.Projection == nil || g.Projection.ProjectionType != types.ProjectionTypeAll {
			t.Errorf("%s must project ALL: list returns whole broadcasts from the index", handlers.ChannelIndex)
		}
	}
	if !found {
		t.Errorf("BroadcastsTable has no index %s", handlers.ChannelIndex)
	}
}
