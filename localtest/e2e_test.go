package localtest_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/gateway"
	"github.com/mcpfn/mcpfn/internal/xraystandin"
	"github.com/mcpfn/mcpfn/localtest"
	"github.com/mcpfn/mcpfn/localtest/internal/claim"
	"github.com/mcpfn/mcpfn/localtest/internal/faulty"
	"github.com/mcpfn/mcpfn/localtest/internal/held"
	"github.com/mcpfn/mcpfn/localtest/internal/s3probe"
)

// The end-to-end tests share one stack (starting one costs a JVM and a few
// seconds of builds on a 2-core machine) and never run in parallel with
// each other: each test keeps to its own caller subject or entity ids, so
// their audit rows cannot mix.
var stack *localtest.Stack

// demoScope is the scope the demo's broadcast_delete requires: the stack
// under test serves this repository, whose project is the demo.
const demoScope = "broadcasts:write"

// Fixture functions: Faulty serves the faulty tool through the gateway;
// FaultySingle is the same code with a concurrency limit of 1, called only
// on the Invoke API to provoke a 429.
const (
	faultyFunction       = "FaultyFunction"
	faultySingleFunction = "FaultySingleFunction"
	faultyTimeoutSeconds = 3
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	if _, err := exec.LookPath("java"); err != nil && os.Getenv(localtest.EnvDynamoDBEndpoint) == "" {
		if os.Getenv("CI") == "true" {
			fmt.Fprintln(os.Stderr, "localtest: java not found and CI=true: failing")
			return 1
		}
		fmt.Fprintln(os.Stderr, "localtest: skipping the end-to-end tests: no java for DynamoDB Local and no MCPFN_DYNAMODB_ENDPOINT")
		return 0
	}
	dir, err := os.MkdirTemp("", "mcpfn-localtest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg := testConfig(dir)
	cfg.DynamoDBEndpoint = os.Getenv(localtest.EnvDynamoDBEndpoint)
	if testing.Verbose() {
		cfg.Stdout = os.Stderr
	}
	stack, err = localtest.Start(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	if err := stack.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "closing the stack:", err)
		code = max(code, 1)
	}
	if code != 0 {
		// The functions' and the gateway's logs say why.
		fmt.Fprintln(os.Stderr, "localtest: the failed run's logs and segments are kept in", dir)
	} else {
		os.RemoveAll(dir)
	}
	return code
}

// testConfig is a stack on free ports whose binaries are cached in the
// repository's .local/testbin (git-ignored), so repeated test runs do not
// re-link every function.
func testConfig(dir string) localtest.Config {
	root, _ := filepath.Abs("..")
	cfg := localtest.Config{
		Dir:          dir,
		BinDir:       filepath.Join(root, ".local", "testbin"),
		MCPAddr:      "127.0.0.1:0",
		InvokeAddr:   "127.0.0.1:0",
		DynamoDBAddr: "127.0.0.1:0",
		XRayAddr:     "127.0.0.1:0",
		OTLPAddr:     "127.0.0.1:0",
		IssuerAddr:   "127.0.0.1:0",
		PoolSize:     2,
		// Free ports for the AgentCore front too (default 8081).
		AgentCoreAddr: "127.0.0.1:0",
		ViewerAddr:    "127.0.0.1:0",
		// A name the Invoke API serves besides loopback ones.
		InvokeAllowedHosts: []string{"invoke.mcpfn.test"},
		ExtraFunctions: []localtest.FunctionSpec{
			{Name: faultyFunction, Package: "./localtest/internal/faulty/function", Tool: faulty.Name, Timeout: faultyTimeoutSeconds},
			{Name: faultySingleFunction, Package: "./localtest/internal/faulty/function", RoleTool: faulty.Tool(), Timeout: faultyTimeoutSeconds, MaxConcurrency: 1},
		},
		ExtraTools: []*adapter.Tool{faulty.Tool()},
	}
	cfg.ExtraFunctions = append(cfg.ExtraFunctions, benchFunctions()...)
	cfg.ExtraFunctions = append(cfg.ExtraFunctions, afterResponseFunctions()...)
	cfg.ExtraFunctions, cfg.ExtraTools = append(cfg.ExtraFunctions, taskFunctions()...), append(cfg.ExtraTools, taskTools()...)
	cfg.ExtraFunctions, cfg.ExtraTools = append(cfg.ExtraFunctions, heldFunctions()...), append(cfg.ExtraTools, held.Tool())
	cfg.ExtraFunctions, cfg.ExtraTools = append(cfg.ExtraFunctions, s3Functions()...), append(cfg.ExtraTools, s3probe.Declared.Tool())
	cfg.ExtraFunctions, cfg.ExtraTools = append(cfg.ExtraFunctions, claimFunctions()...), append(cfg.ExtraTools, claim.Tool())
	// Result links short enough to expire in a test (claimcheck_e2e_test.go).
	cfg.GatewayEnv = map[string]string{gateway.EnvResultLinkTTL: claimLinkTTL.String()}
	cfg.AsyncRetryDelays = taskRetryDelays
	return cfg
}

// bearer adds a bearer token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// connect opens an MCP session as subject (scope broadcasts:write).
func connect(t *testing.T, subject string) *mcp.ClientSession {
	t.Helper()
	token, err := stack.MintToken(map[string]any{"sub": subject, "scope": demoScope})
	if err != nil {
		t.Fatal(err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpfn-e2e", Version: "1.0.0"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{
		Endpoint:   stack.MCPURL(),
		HTTPClient: &http.Client{Transport: bearer{token}, Timeout: time.Minute},
	}, nil)
	if err != nil {
		t.Fatalf("connecting to %s: %v", stack.MCPURL(), err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) map[string]any {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if res.IsError {
		t.Fatalf("%s: tool error: %s", tool, text(res))
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: structured content %s: %v", tool, b, err)
	}
	return out
}

func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// auditor reads and writes the stack's audit table, once the stack has
// settled: a function writes a call's final row after answering it, so a
// test that reads rows right after a call waits for the functions'
// post-runtime work first (held emulators are the test's own to wait for).
func auditor() *audit.Auditor {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a safety net
	defer cancel()
	if err := stack.Settle(ctx); err != nil {
		panic("localtest: the stack did not settle: " + err.Error())
	}
	return audit.New(audit.Config{Table: stack.AuditTable(), Client: stack.DynamoDB()})
}

func unique(prefix string) string { return prefix + "-" + strings.ToLower(rand.Text()[:10]) }

// segment is one X-Ray document from xray.jsonl, subsegments flattened.
type segment struct {
	ID          string    `json:"id"`
	TraceID     string    `json:"trace_id"`
	ParentID    string    `json:"parent_id"`
	Name        string    `json:"name"`
	Subsegments []segment `json:"subsegments"`
}

func readSegments(t *testing.T) map[string]segment {
	t.Helper()
	f, err := os.Open(stack.XRayPath())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]segment{}
	var add func(s segment, trace, parent string)
	add = func(s segment, trace, parent string) {
		if s.TraceID == "" {
			s.TraceID = trace
		}
		if s.ParentID == "" {
			s.ParentID = parent
		}
		out[s.TraceID+"/"+s.ID] = s
		for _, c := range s.Subsegments {
			add(c, s.TraceID, s.ID)
		}
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var s segment
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("xray.jsonl: %v: %s", err, sc.Text())
		}
		add(s, "", "")
	}
	return out
}

// checkSpans asserts that every row's span is an X-Ray segment of the row's
// trace whose parent is the row's parent span, and that the parent span is
// itself a segment of the trace (the gateway's forward subsegment).
func checkSpans(t *testing.T, rows []audit.Row) {
	t.Helper()
	awaitSegments(t, rows)
	var problems []string
	segs := readSegments(t)
	for _, r := range rows {
		if r.TraceID == "" || r.SpanID == "" || r.ParentSpanID == "" {
			problems = append(problems, fmt.Sprintf("row %s (%s) lacks trace/span/parent: %q %q %q", r.CallID, r.Tool, r.TraceID, r.SpanID, r.ParentSpanID))
			continue
		}
		s, ok := segs[r.TraceID+"/"+r.SpanID]
		if !ok {
			problems = append(problems, fmt.Sprintf("row %s (%s): no segment %s in trace %s", r.CallID, r.Tool, r.SpanID, r.TraceID))
			continue
		}
		if s.ParentID != r.ParentSpanID {
			problems = append(problems, fmt.Sprintf("row %s (%s): segment parent %s, row parent %s", r.CallID, r.Tool, s.ParentID, r.ParentSpanID))
		}
		fwd, ok := segs[r.TraceID+"/"+r.ParentSpanID]
		if !ok {
			problems = append(problems, fmt.Sprintf("row %s (%s): parent span %s is no segment of trace %s", r.CallID, r.Tool, r.ParentSpanID, r.TraceID))
			continue
		}
		// The forward subsegment hangs off the gateway function's
		// segment, the root of the trace, as under Lambda's tracing.
		if root, ok := segs[r.TraceID+"/"+fwd.ParentID]; !ok || root.Name != "GatewayFunction" || root.ParentID != "" {
			problems = append(problems, fmt.Sprintf("row %s (%s): the gateway's subsegment %s has parent %q, want the GatewayFunction root segment", r.CallID, r.Tool, fwd.ID, fwd.ParentID))
		}
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// awaitSegments waits until the X-Ray stand-in has received every segment
// checkSpans looks up: each row's span, its parent (the gateway's forward
// subsegment) and that one's parent (the gateway's root segment). The
// stand-in receives over UDP, a real socket that no synctest bubble can wait
// on, so the wait is on its WaitFor, which wakes on each datagram; the
// timeout is a safety net for lost datagrams, not a timing assertion. What is
// still missing then, checkSpans reports.
func awaitSegments(t *testing.T, rows []audit.Row) {
	t.Helper()
	want, seen, forwards := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, r := range rows {
		if r.TraceID != "" && r.SpanID != "" && r.ParentSpanID != "" {
			want[r.TraceID+"/"+r.SpanID] = true
			want[r.TraceID+"/"+r.ParentSpanID] = true
			forwards[r.TraceID+"/"+r.ParentSpanID] = true
		}
	}
	if len(want) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _ = stack.XRay().WaitFor(ctx, func(d xraystandin.Document) bool {
		key := d.TraceID + "/" + d.ID
		seen[key] = true
		delete(want, key)
		if root := d.TraceID + "/" + d.ParentID; forwards[key] && d.ParentID != "" && !seen[root] {
			want[root] = true
		}
		return len(want) == 0
	})
}

func TestCreateGetListDelete(t *testing.T) {
	subject := unique("e2e-crud")
	cs := connect(t, subject)
	channel := unique("crud")

	created := call(t, cs, "broadcast_create", map[string]any{"channel": channel, "text": "hello from the e2e test"})
	id, _ := created["id"].(string)
	if id == "" {
		t.Fatalf("create answered %v", created)
	}
	got := call(t, cs, "broadcast_get", map[string]any{"id": id})
	if got["text"] != "hello from the e2e test" || got["channel"] != channel {
		t.Errorf("get answered %v", got)
	}
	list := call(t, cs, "broadcast_list", map[string]any{"channel": channel})
	if items, _ := list["items"].([]any); len(items) != 1 {
		t.Errorf("list answered %v, want the one broadcast", list)
	}
	deleted := call(t, cs, "broadcast_delete", map[string]any{"id": id})
	if d, _ := deleted["deleted"].(map[string]any); d["id"] != id {
		t.Errorf("delete answered %v", deleted)
	}

	rows, err := auditor().CallerRows(t.Context(), localCaller(subject), audit.QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var tools []string
	for _, r := range rows {
		if r.Status != audit.StatusDone {
			continue // the delete's write-ahead row was completed in place
		}
		tools = append(tools, r.Tool)
		if !r.OK || r.CallerAuthMethod != "jwt" || r.Source != "envelope" {
			t.Errorf("row %+v: want ok, jwt caller, envelope", r)
		}
		if r.Tool != "broadcast_list" && r.Dimensions["entityId"] != id {
			t.Errorf("row of %s has entityId %q, want %q", r.Tool, r.Dimensions["entityId"], id)
		}
	}
	if want := "broadcast_create broadcast_get broadcast_list broadcast_delete"; strings.Join(tools, " ") != want {
		t.Fatalf("audit rows of %s: %v, want %s", subject, tools, want)
	}
	checkSpans(t, rows)
}

func TestBurstOfConcurrentCalls(t *testing.T) {
	const n = 50
	subject := unique("e2e-burst")
	cs := connect(t, subject)
	channel := unique("burst")
	ids := make([]string, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "broadcast_create", Arguments: map[string]any{"channel": channel, "text": fmt.Sprintf("burst %d", i)}})
			if err != nil {
				errs <- err
				return
			}
			if res.IsError {
				errs <- fmt.Errorf("call %d: %s", i, text(res))
				return
			}
			m, _ := res.StructuredContent.(map[string]any)
			ids[i], _ = m["id"].(string)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
	a := auditor()
	seen := map[string]bool{}
	var all []audit.Row
	for i, id := range ids {
		if id == "" || seen[id] {
			t.Fatalf("call %d: id %q (empty or duplicate)", i, id)
		}
		seen[id] = true
		rows, err := a.EntityRows(t.Context(), "entityId", id, audit.QueryOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1 || rows[0].Tool != "broadcast_create" || rows[0].Dimensions["entityId"] != id || rows[0].CallerSubject != subject {
			t.Errorf("entity %s: rows %+v, want one create row of %s", id, rows, subject)
		}
		all = append(all, rows...)
	}
	rows, err := a.CallerRows(t.Context(), localCaller(subject), audit.QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != n {
		t.Errorf("%d rows for %s, want %d", len(rows), subject, n)
	}
	checkSpans(t, all)
	checkOTLP(t, all)
}

// toolError decodes the {error, message, retryable} body of an isError
// result.
func toolError(t *testing.T, res *mcp.CallToolResult) (code string, retryable bool) {
	t.Helper()
	if !res.IsError {
		t.Fatalf("want a tool error, got %s", text(res))
	}
	var body struct {
		Error     string `json:"error"`
		Retryable bool   `json:"retryable"`
	}
	if err := json.Unmarshal([]byte(text(res)), &body); err != nil {
		t.Fatalf("tool error body %q: %v", text(res), err)
	}
	return body.Error, body.Retryable
}

func TestFunctionFailures(t *testing.T) {
	for _, tc := range []struct {
		mode, code string
	}{
		// The process exits mid-invoke: the emulator reports
		// Runtime.ExitError, the router a function error, the gateway a
		// retryable UNAVAILABLE. The function left its write-ahead row,
		// the gateway its own row, which is the call's outcome.
		{faulty.ModeCrash, string(adapter.CodeUnavailable)},
		// The handler ignores its deadline: the adapter answers TIMEOUT
		// itself before the function's timeout and writes a final row.
		{faulty.ModeHang, string(adapter.CodeTimeout)},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			subject := unique("e2e-" + tc.mode)
			cs := connect(t, subject)
			id := unique(tc.mode)
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: faulty.Name, Arguments: map[string]any{"mode": tc.mode, "id": id}})
			if err != nil {
				t.Fatal(err)
			}
			code, retryable := toolError(t, res)
			if code != tc.code || !retryable {
				t.Errorf("%s: error %s retryable=%v, want %s retryable", tc.mode, code, retryable, tc.code)
			}
			if err := stack.Settle(t.Context()); err != nil {
				t.Fatal(err)
			}
			rows, err := auditor().CallerRows(t.Context(), localCaller(subject), audit.QueryOptions{})
			if err != nil {
				t.Fatal(err)
			}
			calls := audit.JoinCalls(rows)
			if len(calls) != 1 || calls[0].Function == nil || calls[0].Function.Tool != faulty.Name || !strings.Contains(calls[0].Function.ArgsPreview, id) {
				t.Fatalf("rows of %s: %+v, want the faulty call's", subject, rows)
			}
			r := *calls[0].Function
			switch tc.mode {
			case faulty.ModeCrash:
				if r.Status != audit.StatusPending {
					t.Errorf("crash row status %q, want pending (the function died before its final row)", r.Status)
				}
				if g := calls[0].Gateway; calls[0].OutcomeBy != audit.OutcomeByGateway || g.ErrorCode != tc.code || g.Outcome != audit.OutcomeUnknown || g.Status != audit.StatusDone {
					t.Errorf("crash: the gateway's row %+v, want the outcome: %s, outcome unknown, final", g, tc.code)
				}
			default:
				if len(rows) != 1 {
					t.Errorf("%s: rows %+v, want the function's only", tc.mode, rows)
				}
				if r.Status != audit.StatusDone || r.ErrorCode != tc.code {
					t.Errorf("row status %q code %q, want done with %s", r.Status, r.ErrorCode, tc.code)
				}
				checkSpans(t, rows)
			}
			// Lambda replaces a crashed environment; so does the
			// emulator: the next call succeeds.
			if out := call(t, cs, faulty.Name, map[string]any{"mode": faulty.ModeOK}); out["mode"] != faulty.ModeOK {
				t.Errorf("after %s: %v", tc.mode, out)
			}
		})
	}
}

func TestUnauthorized(t *testing.T) {
	expired, _ := stack.MintToken(map[string]any{"sub": "someone", "exp": time.Now().Add(-time.Hour).Unix(), "iat": time.Now().Add(-2 * time.Hour).Unix()})
	wrongAud, _ := stack.MintToken(map[string]any{"sub": "someone", "aud": "another-api"})
	noSub, _ := stack.MintToken(map[string]any{})
	for name, token := range map[string]string{
		"missing": "", "garbage": "not-a-jwt", "expired": expired, "wrong audience": wrongAud, "no subject": noSub,
		"tampered": stack.Token()[:len(stack.Token())-4] + "AAAA",
	} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, stack.MCPURL(), strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s token: HTTP %d, want 401", name, resp.StatusCode)
		}
	}
}

// lambdaClient is an AWS SDK client for the stack's Invoke API that never
// retries, so each answer is observed as sent.
func lambdaClient() *lambda.Client {
	return lambda.New(lambda.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(stack.InvokeURL()),
		Credentials:  credentials.NewStaticCredentialsProvider(localtest.OperatorKeyID, localtest.OperatorSecret, ""),
		Retryer:      aws.NopRetryer{},
	})
}

func TestInvokeAPI(t *testing.T) {
	c := lambdaClient()
	ctx := t.Context()
	invoke := func(name string, payload any, mods ...func(*lambda.InvokeInput)) (*lambda.InvokeOutput, error) {
		b, _ := json.Marshal(payload)
		in := &lambda.InvokeInput{FunctionName: aws.String(name), Payload: b}
		for _, m := range mods {
			m(in)
		}
		return c.Invoke(ctx, in)
	}
	jsonrpc := func(mode string, sleepMs int) map[string]any {
		return map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{"name": faulty.Name, "arguments": map[string]any{"mode": mode, "sleepMs": sleepMs}}}
	}

	t.Run("by name and by ARN", func(t *testing.T) {
		for _, name := range []string{faultySingleFunction, "arn:aws:lambda:us-east-1:000000000000:function:" + faultySingleFunction + ":$LATEST"} {
			// One environment: the previous call's audit extension may
			// still hold it (Lambda would throttle this call).
			if err := stack.Settle(ctx); err != nil {
				t.Fatal(err)
			}
			out, err := invoke(name, jsonrpc(faulty.ModeOK, 0))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if out.FunctionError != nil || !strings.Contains(string(out.Payload), `"mode":"ok"`) || aws.ToString(out.ExecutedVersion) != "$LATEST" {
				t.Errorf("%s: %v %s %v", name, out.FunctionError, out.Payload, out.ExecutedVersion)
			}
		}
	})
	t.Run("client context reaches the function", func(t *testing.T) {
		// The AgentCore Gateway format names the tool only in the client
		// context, so an answer for broadcast_list proves it was forwarded.
		cc, _ := json.Marshal(map[string]any{"custom": map[string]string{
			"bedrockAgentCoreToolName":       "target___broadcast_list",
			"bedrockAgentCoreAwsRequestId":   unique("req"),
			"bedrockAgentCoreMcpMessageId":   "1",
			"bedrockAgentCoreGatewayId":      "gw",
			"bedrockAgentCoreTargetId":       "target",
			"bedrockAgentCoreMessageVersion": "1.0",
		}})
		out, err := invoke("BroadcastListFunction", map[string]any{"channel": unique("empty")}, func(in *lambda.InvokeInput) {
			in.ClientContext = aws.String(base64.StdEncoding.EncodeToString(cc))
		})
		if err != nil {
			t.Fatal(err)
		}
		var res struct {
			IsError           bool           `json:"isError"`
			StructuredContent map[string]any `json:"structuredContent"`
		}
		if err := json.Unmarshal(out.Payload, &res); err != nil || res.IsError || res.StructuredContent == nil {
			t.Errorf("AgentCore-format answer %s (%v): want a CallToolResult of broadcast_list", out.Payload, err)
		}
	})
	t.Run("unknown function", func(t *testing.T) {
		_, err := invoke("NoSuchFunction", map[string]any{})
		var nf *types.ResourceNotFoundException
		if !errors.As(err, &nf) {
			t.Errorf("got %v, want ResourceNotFoundException", err)
		}
	})
	t.Run("invalid client context", func(t *testing.T) {
		_, err := invoke(faultySingleFunction, map[string]any{}, func(in *lambda.InvokeInput) { in.ClientContext = aws.String("not base64!") })
		var bad *types.InvalidRequestContentException
		if !errors.As(err, &bad) {
			t.Errorf("got %v, want InvalidRequestContentException", err)
		}
	})
	t.Run("crash", func(t *testing.T) {
		out, err := invoke(faultySingleFunction, jsonrpc(faulty.ModeCrash, 0))
		if err != nil {
			t.Fatal(err)
		}
		if aws.ToString(out.FunctionError) != "Unhandled" || !strings.Contains(string(out.Payload), "Runtime.ExitError") {
			t.Errorf("function error %v, payload %s", aws.ToString(out.FunctionError), out.Payload)
		}
	})
	t.Run("throttled", func(t *testing.T) {
		// Two slow calls at once on a function limited to one
		// environment: one runs, the other is refused at once.
		if err := stack.Settle(ctx); err != nil {
			t.Fatal(err)
		}
		errs := make(chan error, 2)
		for range 2 {
			go func() {
				_, err := invoke(faultySingleFunction, jsonrpc(faulty.ModeSlow, 1500))
				errs <- err
			}()
		}
		var ok, throttled int
		for range 2 {
			err := <-errs
			var tooMany *types.TooManyRequestsException
			switch {
			case err == nil:
				ok++
			case errors.As(err, &tooMany):
				throttled++
			default:
				t.Errorf("unexpected error %v", err)
			}
		}
		if ok != 1 || throttled != 1 {
			t.Errorf("%d succeeded and %d were throttled, want 1 and 1", ok, throttled)
		}
	})
}

// TestRestartWithoutOrphans starts a second, small stack, stops it, checks
// that none of its processes survived, and starts it again on the same
// addresses.
func TestRestartWithoutOrphans(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.DynamoDBEndpoint = stack.DynamoDBEndpoint()
	cfg.PoolSize = 1
	cfg.Functions = []localtest.FunctionSpec{}
	cfg.ExtraFunctions = cfg.ExtraFunctions[:1]
	cfg.ExtraTools = cfg.ExtraTools[:1] // the first extra function's tool
	st, err := localtest.Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Pin the ports the first stack got.
	cfg.MCPAddr = strings.TrimSuffix(strings.TrimPrefix(st.MCPURL(), "http://"), "/mcp")
	cfg.InvokeAddr = strings.TrimPrefix(st.InvokeURL(), "http://")
	cfg.XRayAddr = st.XRayAddr()

	cs := connectTo(t, st)
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: faulty.Name, Arguments: map[string]any{"mode": "ok"}}); err != nil {
		t.Fatal(err)
	}
	pids := st.Processes()
	if len(pids) < 2 {
		t.Fatalf("processes %v: want an emulator and its bootstrap", pids)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range pids {
		if localtest.Alive(p) {
			t.Errorf("process %d outlived Close", p)
		}
	}

	st2, err := localtest.Start(t.Context(), cfg)
	if err != nil {
		t.Fatalf("second start on the same addresses: %v", err)
	}
	defer st2.Close()
	if _, err := connectTo(t, st2).CallTool(t.Context(), &mcp.CallToolParams{Name: faulty.Name, Arguments: map[string]any{"mode": "ok"}}); err != nil {
		t.Fatal(err)
	}
}

func connectTo(t *testing.T, st *localtest.Stack) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpfn-e2e", Version: "1.0.0"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{
		Endpoint:   st.MCPURL(),
		HTTPClient: &http.Client{Transport: bearer{st.Token()}, Timeout: time.Minute},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// localCaller is the principal a token the local issuer minted for subject
// names in the audit table.
func localCaller(subject string) audit.Caller {
	return audit.Caller{AuthMethod: "jwt", Issuer: stack.Issuer(), Subject: subject}
}
