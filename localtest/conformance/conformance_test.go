package conformance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/gateway"
	"github.com/mcpfn/mcpfn/localtest"
	"github.com/mcpfn/mcpfn/localtest/conformance"
	"github.com/mcpfn/mcpfn/taskstore"
)

// The external clients, installed by `make deps` (npm ci in tools/node). The
// node npm package provides Node 22, which both need; the machine's node may
// be older, so every command runs with this one.
const (
	nodeDir          = "tools/node/node_modules"
	nodeBin          = nodeDir + "/.bin/node"
	inspectorMain    = nodeDir + "/@modelcontextprotocol/inspector/clients/launcher/build/index.js"
	conformanceMain  = nodeDir + "/@modelcontextprotocol/conformance/dist/index.js"
	baselineFile     = "baseline.json"
	fixtureFnPackage = "./localtest/conformance/function"
)

var (
	stackOnce sync.Once
	stack     *localtest.Stack
	stackErr  error
	stackDir  string // the stack's files (logs, xray.jsonl); removed after the run
)

func TestMain(m *testing.M) {
	code := m.Run()
	if stack != nil {
		if err := stack.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "closing the stack:", err)
			code = max(code, 1)
		}
	}
	if stackDir != "" {
		if code == 0 {
			os.RemoveAll(stackDir)
		} else {
			fmt.Fprintln(os.Stderr, "the stack's logs are kept in", stackDir)
		}
	}
	os.Exit(code)
}

// repoRoot is the module root (this package is two levels down).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// requireNode returns the Node 22 binary from tools/node, or skips the test
// when `make deps` has not installed it — except in CI, where a missing
// client must fail rather than silently pass.
func requireNode(t *testing.T, entry string) (node, main string) {
	t.Helper()
	root := repoRoot(t)
	node, main = filepath.Join(root, nodeBin), filepath.Join(root, entry)
	for _, p := range []string{node, main} {
		if _, err := os.Stat(p); err != nil {
			msg := fmt.Sprintf("%s is missing: run `make deps` (npm ci in tools/node) to install the MCP Inspector, the conformance suite and Node 22", p)
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	return node, main
}

// fixtureFunctions runs every fixture tool as its own function, built from
// the one fixture main and told which tool to serve by its environment.
func fixtureFunctions() []localtest.FunctionSpec {
	var specs []localtest.FunctionSpec
	for _, name := range conformance.Names() {
		specs = append(specs, localtest.FunctionSpec{
			Name:    functionName(name),
			Package: fixtureFnPackage,
			Tool:    name,
			Env: map[string]string{
				conformance.EnvTool: name,
				// A cancelled task stops within a fifth of a second, not
				// the default 2 s: the suite gives it 10 s to settle, but
				// the fixtures' one environment is busy until it does.
				adapter.EnvTaskWatchInterval: taskWatchInterval.String(),
			},
		})
	}
	return specs
}

// tasksTable is the tasks table's logical id in template.yaml.
const tasksTable = "TasksTable"

// taskWatchInterval is how often a fixture's running task reads its record
// for a cancel.
const taskWatchInterval = 200 * time.Millisecond

// functionName is a fixture's function name on the Invoke API.
func functionName(tool string) string { return "Conformance_" + tool }

// startStack starts the local stack once for the package, with the fixtures
// beside the demo's tools; TestMain closes it.
func startStack(t *testing.T) *localtest.Stack {
	t.Helper()
	root := repoRoot(t) // outside Do: a Fatal inside would leave the Once done and no stack
	stackOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mcpfn-conformance-")
		if err != nil {
			stackErr = err
			return
		}
		stackDir = dir
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		stack, stackErr = localtest.Start(ctx, localtest.Config{
			Dir: stackDir,
			// Kept between runs (go build's up-to-date check then skips
			// relinking), but not shared with localtest's own tests: go test
			// runs packages in parallel, and two stacks building the same
			// binary at once could overwrite one the other is running.
			BinDir:         filepath.Join(root, ".local", "testbin-conformance"),
			MCPAddr:        "127.0.0.1:0",
			InvokeAddr:     "127.0.0.1:0",
			DynamoDBAddr:   "127.0.0.1:0",
			XRayAddr:       "127.0.0.1:0",
			IssuerAddr:     "127.0.0.1:0",
			AgentCoreAddr:  "127.0.0.1:0",
			ViewerAddr:     "127.0.0.1:0",
			PoolSize:       1,
			ExtraFunctions: fixtureFunctions(),
			ExtraTools:     conformance.Catalog(),
		})
	})
	if stackErr != nil {
		t.Fatalf("local stack: %v", stackErr)
	}
	return stack
}

// openGateway is a second gateway over the same stack's Invoke API, serving
// the fixtures with auth none: the conformance suite cannot send an
// Authorization header. Everything behind the gateway — the Invoke API, the
// emulators, the adapter — is the stack's.
func openGateway(t *testing.T, st *localtest.Stack) string {
	t.Helper()
	fns, secrets := map[string]string{}, map[string]string{}
	for _, name := range conformance.Names() {
		fns[name] = functionName(name)
		secrets[name] = st.KeySecret(functionName(name))
	}
	// The SDK logs each removed-in-2026 method the suite probes at ERROR;
	// keep that beside the stack's other logs instead of in the test output.
	logFile, err := os.Create(filepath.Join(stackDir, "logs", "conformance-gateway.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logFile.Close() })
	gw, err := gateway.New(gateway.Config{
		Tools:     conformance.Catalog(),
		Functions: fns,
		Auth:      gateway.AuthNone, // explicit: this gateway is for the suite only
		// It signs with the stack's keys, as the stack's own gateway does,
		// and calls AWS as the gateway's role (the keys' resource policies
		// let no other principal read them).
		KeySecrets:    secrets,
		KeySecretsAPI: st.SecretsManagerAs(st.GatewayCredentials()),
		Lambda: lambda.New(lambda.Options{
			Region:       "us-east-1",
			BaseEndpoint: aws.String(st.InvokeURL()),
			Credentials:  credentials.StaticCredentialsProvider{Value: st.GatewayCredentials()},
		}),
		ServerName: "mcpfn-conformance",
		// The stack's tasks table (from template.yaml), which the task
		// fixtures' functions record their runs in; polling every 200 ms
		// keeps the suite's task scenarios short.
		Tasks:  taskstore.New(st.DynamoDBAs(st.GatewayCredentials()), st.Table(tasksTable), taskstore.Options{PollInterval: 200 * time.Millisecond}),
		Logger: slog.New(slog.NewJSONHandler(logFile, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	t.Cleanup(func() {
		srv.Close()
		gw.Close()
	})
	return srv.URL + "/mcp"
}

// runNode runs a Node entry point with Node 22 first on PATH (launchers that
// spawn node find the same one) and HOME in a temporary directory (the
// Inspector keeps a catalog and client config there).
func runNode(t *testing.T, ctx context.Context, node, main string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	home := t.TempDir()
	cmd := exec.CommandContext(ctx, node, append([]string{main}, args...)...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(),
		"PATH="+filepath.Dir(node)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+home,
		"MCP_CATALOG_PATH="+filepath.Join(home, "mcp.json"),
		"MCP_CLIENT_CONFIG_PATH="+filepath.Join(home, "client.json"),
		"NO_COLOR=1",
		"NODE_NO_WARNINGS=1",
	)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// TestInspectorCLI lists and calls tools through the local gateway (JWT auth,
// the stack's demo token) with the MCP Inspector's CLI.
func TestInspectorCLI(t *testing.T) {
	node, main := requireNode(t, inspectorMain)
	st := startStack(t)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()

	inspector := func(args ...string) map[string]any {
		t.Helper()
		base := []string{"--cli", st.MCPURL(), "--transport", "http",
			"--header", "Authorization: Bearer " + st.Token(), "--format", "json", "--quiet"}
		stdout, stderr, err := runNode(t, ctx, node, main, append(base, args...)...)
		if err != nil {
			t.Fatalf("inspector %v: %v\nstdout: %s\nstderr: %s", args, err, stdout, stderr)
		}
		// --format json prints one object, {"result": <the MCP result>}.
		var v struct {
			Result map[string]any `json:"result"`
		}
		if err := json.Unmarshal([]byte(strings.TrimSpace(stdout)), &v); err != nil || v.Result == nil {
			t.Fatalf("inspector %v: output is not one JSON object with a result: %v\n%s\nstderr: %s", args, err, stdout, stderr)
		}
		return v.Result
	}

	// Both eras: the Inspector's ad-hoc default (legacy: initialize
	// handshake) and 2026-07-28 (stateless, per-request _meta).
	for _, era := range []string{"legacy", "modern"} {
		list := inspector("--protocol-era", era, "--method", "tools/list")
		tools, _ := list["tools"].([]any)
		names := map[string]bool{}
		for _, tl := range tools {
			if m, ok := tl.(map[string]any); ok {
				names[fmt.Sprint(m["name"])] = true
			}
		}
		for _, want := range append([]string{"broadcast_create", "broadcast_get", "broadcast_list", "broadcast_delete", "broadcast_digest"}, conformance.Names()...) {
			if !names[want] {
				t.Errorf("tools/list (%s era) through the Inspector lacks %s; got %v", era, want, names)
			}
		}
	}

	created := inspector("--method", "tools/call", "--tool-name", "broadcast_create",
		"--tool-arg", "channel=inspector", "text=hello from the Inspector")
	sc, _ := created["structuredContent"].(map[string]any)
	if created["isError"] == true || sc == nil || sc["id"] == "" || sc["id"] == nil {
		t.Fatalf("broadcast_create through the Inspector: %v", created)
	}
	got := inspector("--protocol-era", "modern", "--method", "tools/call", "--tool-name", "broadcast_get", "--tool-arg", "id="+fmt.Sprint(sc["id"]))
	if b, _ := json.Marshal(got); got["isError"] == true || !strings.Contains(string(b), "hello from the Inspector") {
		t.Fatalf("broadcast_get through the Inspector: %s", b)
	}

	// A fixture's image block reaches the client intact.
	img := inspector("--method", "tools/call", "--tool-name", conformance.ToolImage)
	content, _ := img["content"].([]any)
	if len(content) != 1 || content[0].(map[string]any)["type"] != "image" || content[0].(map[string]any)["mimeType"] != "image/png" {
		t.Fatalf("%s through the Inspector: %v", conformance.ToolImage, img)
	}

	// A progress call: the progress token makes the gateway answer on SSE
	// and relay the function's frames. The CLI prints only the result (it
	// runs without a progress handler), so this proves the streamed path
	// answers it whole; that frames come first is asserted with the go-sdk
	// client (localtest's TestProgressReachesTheGoSDKClient).
	progress := inspector("--method", "tools/call", "--tool-name", conformance.ToolProgress, "--tool-metadata", "progressToken=7")
	if b, _ := json.Marshal(progress); progress["isError"] == true || !strings.Contains(string(b), "progress done") {
		t.Errorf("%s with a progress token through the Inspector: %s", conformance.ToolProgress, b)
	}
	// A task: in the modern era the Inspector declares the Tasks extension,
	// accepts the CreateTaskResult and polls tasks/get to the result.
	task := inspector("--protocol-era", "modern", "--method", "tools/call", "--tool-name", conformance.ToolSlowCompute,
		"--tool-arg", "seconds=2", "label=inspector-task")
	if b, _ := json.Marshal(task); task["isError"] == true || !strings.Contains(string(b), "inspector-task") {
		t.Errorf("%s as a task through the Inspector: %s", conformance.ToolSlowCompute, b)
	}
	// The README's tour command: the demo's long-running tool as a task,
	// over the channel broadcast_create posted to above.
	digest := inspector("--protocol-era", "modern", "--method", "tools/call", "--tool-name", "broadcast_digest", "--tool-arg", "channel=inspector")
	if dsc, _ := digest["structuredContent"].(map[string]any); digest["isError"] == true || dsc == nil || dsc["broadcasts"] != float64(1) {
		b, _ := json.Marshal(digest)
		t.Errorf("broadcast_digest as a task through the Inspector: %s", b)
	}
}

// The suite's time limits: per scenario (its --timeout) and per revision's
// requirement set.
const (
	scenarioTimeout = 60 * time.Second
	suiteTimeout    = 8 * time.Minute
)

// EnvScenarios, a comma-separated list of scenario names, runs only those
// scenarios, once, at the suite's default revision, instead of the
// requirement sets: a quick loop while working on one feature, e.g.
//
//	MCPFN_CONFORMANCE_SCENARIOS=tasks-lifecycle go test -run '^TestConformanceSuite$' ./localtest/conformance/
const EnvScenarios = "MCPFN_CONFORMANCE_SCENARIOS"

func scenariosFromEnv() []string {
	return strings.FieldsFunc(os.Getenv(EnvScenarios), func(r rune) bool { return r == ',' || r == ' ' })
}

// baseline is baseline.json: what the suite may fail without failing the
// test. Keys are a scenario ("tools-call-with-progress") or one check of a
// scenario ("server-stateless:sep-2575-server-declares-prompts-in-discover"),
// as in the suite's own expected-failures files, so that excusing one check
// does not stop the others from being enforced.
type baseline struct {
	// Requirements are the spec revisions whose requirement sets are run
	// (conformance server --requirements <revision>), each at its own wire
	// version: the gateway serves both eras.
	Requirements []string         `json:"requirements"`
	Expected     map[string]entry `json:"expected"`
}

type entry struct {
	// Kind: "inapplicable" (needs what a tools-only stateless gateway in
	// front of Lambda cannot have), "extension" (optional, not scored by the
	// requirement set) or "gap" (applicable, not built yet: fix it).
	Kind   string `json:"kind"`
	Reason string `json:"reason"`
}

func readBaseline(t *testing.T) baseline {
	t.Helper()
	b, err := os.ReadFile(baselineFile)
	if err != nil {
		t.Fatal(err)
	}
	var bl baseline
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&bl); err != nil {
		t.Fatalf("%s: %v", baselineFile, err)
	}
	if len(bl.Requirements) == 0 {
		t.Fatalf("%s names no requirement set", baselineFile)
	}
	for key, e := range bl.Expected {
		if strings.TrimSpace(e.Reason) == "" {
			t.Errorf("%s: %s has no reason", baselineFile, key)
		}
		switch e.Kind {
		case "inapplicable", "extension", "gap":
		default:
			t.Errorf("%s: %s has kind %q, want inapplicable, extension or gap", baselineFile, key, e.Kind)
		}
	}
	return bl
}

// check is one entry of a scenario's checks.json.
type check struct {
	ID           string `json:"id"`
	Status       string `json:"status"`
	ErrorMessage string `json:"errorMessage"`
}

// resultDir is the suite's directory name of one scenario run.
var resultDir = regexp.MustCompile(`^server-(.+)-\d{4}-\d{2}-\d{2}T[0-9-]+Z$`)

// scenarioResults reads the suite's output directory: one directory per
// scenario run, server-<scenario>-<timestamp>, each with checks.json.
func scenarioResults(t *testing.T, dir string) map[string][]check {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*", "checks.json"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]check{}
	for _, f := range files {
		m := resultDir.FindStringSubmatch(filepath.Base(filepath.Dir(f)))
		if m == nil {
			t.Fatalf("unexpected result directory %s: has the suite changed its layout?", f)
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var checks []check
		if err := json.Unmarshal(b, &checks); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[m[1]] = append(out[m[1]], checks...)
	}
	return out
}

// TestConformanceSuite runs the official conformance suite's server scenarios
// — the requirement set of each revision in the baseline — against the
// fixtures behind the gateway and compares the outcome with the baseline: a
// failure not in the baseline fails the test; a baselined scenario or check
// that passes is reported so the baseline can shrink.
func TestConformanceSuite(t *testing.T) {
	node, main := requireNode(t, conformanceMain)
	bl := readBaseline(t)
	st := startStack(t)
	url := openGateway(t, st)

	used := map[string]bool{}
	for _, rev := range bl.Requirements {
		t.Run(rev, func(t *testing.T) {
			out := t.TempDir()
			// The tasks scenarios wait for tasks to settle (up to 10 s
			// each, a cancelled 60-second task among them), so a scenario
			// may take far longer than a call: scenarioTimeout per
			// scenario, suiteTimeout for a revision's whole set.
			ctx, cancel := context.WithTimeout(t.Context(), suiteTimeout)
			defer cancel()
			args := []string{"server", "--url", url, "--output-dir", out, "--timeout", fmt.Sprint(scenarioTimeout.Milliseconds())}
			runs := [][]string{append(slices.Clone(args), "--requirements", rev)}
			if only := scenariosFromEnv(); len(only) > 0 {
				// A targeted run: these scenarios only, once, at the suite's
				// default revision (an extension's scenarios, tasks-*, are
				// not on a revision's timeline).
				if rev != bl.Requirements[0] {
					t.Skipf("%s: a targeted run runs once", EnvScenarios)
				}
				runs = nil
				for _, sc := range only {
					runs = append(runs, append(slices.Clone(args), "--scenario", sc))
				}
			}
			var stdout, stderr string
			var err error
			for _, a := range runs {
				o, e, rerr := runNode(t, ctx, node, main, a...)
				stdout, stderr, err = stdout+o, stderr+e, errors.Join(err, rerr)
			}
			// A non-zero exit is expected while baselined scenarios fail;
			// the checks decide.
			results := scenarioResults(t, out)
			if len(results) == 0 {
				t.Fatalf("the conformance suite left no results (%v)\nstdout: %s\nstderr: %s", err, stdout, stderr)
			}
			var passed, partial, vacuous, baselined []string
			for _, name := range sortedKeys(results) {
				whole, wholeListed := bl.Expected[name]
				var unexpected []string
				failedChecks := map[string]bool{}
				succeeded := false
				for _, c := range results[name] {
					succeeded = succeeded || c.Status == "SUCCESS"
					if c.Status != "FAILURE" {
						continue
					}
					failedChecks[c.ID] = true
					if _, ok := bl.Expected[name+":"+c.ID]; ok {
						used[name+":"+c.ID] = true
						continue
					}
					if !wholeListed {
						unexpected = append(unexpected, c.ID+": "+c.ErrorMessage)
					}
				}
				switch {
				case wholeListed && len(failedChecks) == 0:
					t.Logf("scenario %s (%s) passes now: remove it from %s", name, whole.Kind, baselineFile)
					passed = append(passed, name)
				case wholeListed:
					used[name] = true
					baselined = append(baselined, name)
				case len(unexpected) > 0:
					t.Errorf("scenario %s fails and is not in %s:\n  %s", name, baselineFile, strings.Join(unexpected, "\n  "))
				case len(failedChecks) > 0:
					partial = append(partial, name)
				case !succeeded:
					// Only skipped or informational checks: the
					// scenario had nothing to exercise here, which is
					// not a pass.
					vacuous = append(vacuous, name)
					for _, c := range results[name] {
						t.Logf("%s: %s %s %s", name, c.ID, c.Status, c.ErrorMessage)
					}
				default:
					passed = append(passed, name)
				}
			}
			applicable := len(results) - len(baselined) - len(vacuous)
			t.Logf("conformance %s: %d passed / %d applicable / %d baselined (%d scenarios run; passing but for baselined checks: %s; nothing exercised: %s)",
				rev, len(passed), applicable, len(baselined), len(results), strings.Join(partial, ", "), strings.Join(vacuous, ", "))
			if testing.Verbose() {
				t.Logf("passed: %s", strings.Join(passed, ", "))
				t.Logf("baselined: %s", strings.Join(baselined, ", "))
			}
		})
	}
	// A key no run needed is stale, or a typo that excuses nothing.
	for _, key := range sortedKeys(bl.Expected) {
		if !used[key] {
			t.Logf("%s: %s excused no failure in this run: remove it if it keeps passing", baselineFile, key)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
