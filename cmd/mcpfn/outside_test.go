package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/internal/project"
	"github.com/mcpfn/mcpfn/localtest"
)

// guide is the page TestOutsideProjectFollowsTheGuide follows.
const guide = "docs/guide/own-repository.md"

// TestOutsideProjectFollowsTheGuide is an outside user's path, in a
// temporary directory, with this checkout as mcpfn (a replace directive):
// `mcpfn init`, the second tool of docs/guide/own-repository.md added from
// the page's own code blocks, `mcpfn template` and `-check`, the project's
// own `go test ./...` with the public kit, then `go tool mcpfn local`
// reaching READY, tools/list through its gateway showing exactly the
// project's tools, and a call leaving an audit row that names its caller.
// Every command runs as the project runs it: `go tool mcpfn` from the
// project's module.
func TestOutsideProjectFollowsTheGuide(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a whole project (-short)")
	}
	repo, err := project.Find(".")
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(repo.Root, guide))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "notes")

	// 1. mcpfn init, as `go run ./cmd/mcpfn init -dir ../notes
	// example.com/notes` in a clone: no -mcpfn flag, the clone is found
	// from where this mcpfn was built.
	var out, errb bytes.Buffer
	if code := run(ctx, []string{"init", "-dir", dir, "example.com/notes"}, nil, &out, &errb); code != 0 {
		t.Fatalf("mcpfn init: exit %d\n%s%s", code, out.String(), errb.String())
	}
	gomod, _ := os.ReadFile(filepath.Join(dir, "go.mod"))
	if !strings.Contains(string(gomod), "replace github.com/mcpfn/mcpfn => "+repo.Root) || !strings.Contains(string(gomod), "tool github.com/mcpfn/mcpfn/cmd/mcpfn") {
		t.Fatalf("go.mod does not use this checkout as a tool:\n%s", gomod)
	}
	before := readFile(t, filepath.Join(dir, "template.yaml"))

	// 2. The guide's second tool, from the page itself.
	blocks := guideFiles(t, string(page))
	for _, want := range []string{"template.yaml", "handlers/note.go", "functions/note_add/main.go", "handlers/note_test.go"} {
		if _, ok := blocks[want]; !ok {
			t.Fatalf("%s has no code block for %s", guide, want)
		}
	}
	for path, body := range blocks {
		target := filepath.Join(dir, path)
		if path == "template.yaml" {
			// "right below the Resources: line"
			tmpl := readFile(t, target)
			body = strings.Replace(tmpl, "\nResources:\n", "\nResources:\n"+body, 1)
			if body == tmpl {
				t.Fatal("the scaffold's template.yaml has no Resources: line")
			}
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(target, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	userTable := readFile(t, filepath.Join(dir, "template.yaml"))

	// 3. The guide's commands, as printed.
	for _, args := range [][]string{
		{"mod", "tidy"},
		{"tool", "mcpfn", "template"},
		{"tool", "mcpfn", "template", "-check"},
		{"test", "./..."},
	} {
		goIn(ctx, t, dir, args...)
	}
	after := readFile(t, filepath.Join(dir, "template.yaml"))
	if region(before, "tool hello") != region(after, "tool hello") || region(after, "tool hello") == "" {
		t.Error("adding note_add changed hello's region")
	}
	if region(after, "tool note_add") == "" || !strings.Contains(after, "dynamodb:PutItem") {
		t.Error("no region for note_add, or its role lacks its declared PutItem")
	}
	if !strings.Contains(after, blocks["template.yaml"]) || !strings.HasPrefix(after, userTable[:strings.Index(userTable, "Resources:\n")]) {
		t.Error("the hand-written NotesTable or the lines before it did not survive `mcpfn template`")
	}

	// 4. go tool mcpfn local, on ports of its own.
	ports := freePorts(t, 3)
	bin := strings.TrimSpace(goIn(ctx, t, dir, "tool", "-n", "mcpfn"))
	local := exec.Command(bin, "local")
	local.Dir = dir
	local.Env = append(os.Environ(),
		localtest.EnvDir+"="+filepath.Join(t.TempDir(), "local"),
		localtest.EnvMCPAddr+"=127.0.0.1:0",
		localtest.EnvInvokeAddr+"="+ports[0],
		localtest.EnvDynamoDBAddr+"="+ports[1],
		localtest.EnvXRayAddr+"=127.0.0.1:0",
		localtest.EnvIssuerAddr+"="+ports[2],
		localtest.EnvAgentCoreAddr+"=127.0.0.1:0",
		localtest.EnvViewerAddr+"=127.0.0.1:0",
		"GOWORK=off",
	)
	stdout, err := local.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr lockedBuffer
	local.Stderr = &stderr
	if err := local.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = local.Process.Signal(syscall.SIGINT)
		done := make(chan error, 1)
		go func() { done <- local.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("mcpfn local did not stop cleanly: %v\n%s", err, stderr.String())
			}
		case <-time.After(30 * time.Second):
			_ = local.Process.Kill()
			t.Errorf("mcpfn local did not stop on SIGINT\n%s", stderr.String())
		}
	})
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "READY ") {
				ready <- sc.Text()
			}
		}
		close(ready)
	}()
	var line string
	select {
	case l, ok := <-ready:
		if !ok {
			t.Fatalf("mcpfn local exited before READY:\n%s", stderr.String())
		}
		line = l
	case <-ctx.Done():
		t.Fatalf("no READY line:\n%s", stderr.String())
	}
	m := regexp.MustCompile(`^READY mcp=(\S+) token=(\S+)$`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("READY line %q", line)
	}
	mcpURL, token := m[1], m[2]

	// 5. tools/list shows exactly the project's tools; a call succeeds.
	client := mcp.NewClient(&mcp.Implementation{Name: "outside-test", Version: "1"}, nil)
	session, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   mcpURL,
		HTTPClient: &http.Client{Transport: bearer{token}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	list, err := session.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"hello", "note_add"}) {
		t.Fatalf("tools/list through the project's gateway: %v, want exactly hello and note_add", names)
	}
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "note_add", Arguments: map[string]any{"text": "from outside"}})
	if err != nil || res.IsError {
		b, _ := json.Marshal(res)
		t.Fatalf("note_add: %v %s\n%s", err, b, stderr.String())
	}
	id, _ := res.StructuredContent.(map[string]any)["id"].(string)

	// 6. Its audit row, once the stack has settled (the row is written
	// after the answer), names the caller and the note.
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+ports[0]+localtest.SettlePath, nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("settle: %v %v", resp, err)
	}
	db := dynamodb.New(dynamodb.Options{
		Region: "us-east-1", BaseEndpoint: aws.String("http://" + ports[1]),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
	})
	scan, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("AuditTable")})
	if err != nil {
		t.Fatal(err)
	}
	var rows []audit.Row
	if err := attributevalue.UnmarshalListOfMaps(scan.Items, &rows); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range rows {
		if r.Tool == "note_add" && r.OK && r.CallerSubject == localtest.DemoSubject && r.Dimensions["entityId"] == id {
			found = true
		}
	}
	if !found {
		t.Fatalf("no audit row of the note_add call by %s on %s among %+v", localtest.DemoSubject, id, rows)
	}
}

// guideFiles returns the page's code blocks that start with the file they
// hold ("// handlers/note.go", "# template.yaml (under Resources:)"), by
// path, without that first line.
func guideFiles(t *testing.T, page string) map[string]string {
	t.Helper()
	out := map[string]string{}
	re := regexp.MustCompile("(?s)```(?:go|yaml)\n((?://|#) ([A-Za-z0-9_./-]+)[^\n]*)\n(.*?)```")
	for _, m := range re.FindAllStringSubmatch(page, -1) {
		out[m[2]] = m[3]
	}
	return out
}

// region returns the body of template region name ("" when absent).
func region(tmpl, name string) string {
	begin := strings.Index(tmpl, "# >>> mcpfn "+name+":")
	end := strings.Index(tmpl, "# <<< mcpfn "+name+"\n")
	if begin < 0 || end < begin {
		return ""
	}
	return tmpl[begin:end]
}

// goIn runs the go command in dir and returns its stdout; a failure fails
// the test with everything the command printed.
func goIn(ctx context.Context, t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// freePorts returns n loopback addresses that were free a moment ago.
func freePorts(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().String())
	}
	for _, ln := range lns {
		ln.Close()
	}
	return out
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
