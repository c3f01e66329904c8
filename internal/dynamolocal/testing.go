package dynamolocal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/internal/samtemplate"
)

// EndpointEnv names the environment variable that points ForTest at a
// DynamoDB endpoint that is already running instead of starting one.
const EndpointEnv = "MCPFN_DYNAMODB_ENDPOINT"

// shared is the one emulator of this test binary. Starting a JVM costs
// seconds, so every test in the binary reuses it and keeps apart from the
// others through unique table names (UniqueName).
var shared struct {
	once   sync.Once
	server *Server
	err    error
}

// ForTest returns the test binary's shared DynamoDB Local, starting it on
// first use. The server is stopped by Main; call it from the package's
// TestMain. (A binary that forgets still leaves no JVM behind on Linux: the
// kernel kills it when the binary exits.)
//
// Without Java on PATH the test is skipped, unless CI=true, where a missing
// Java means a broken runner and the test fails instead. The first run on a
// machine installs DynamoDB Local into the per-user cache (its progress on
// stderr); an install that fails (no npm, no registry) fails the test.
func ForTest(t testing.TB) *Server {
	t.Helper()
	if ep := os.Getenv(EndpointEnv); ep != "" {
		return &Server{endpoint: strings.TrimRight(ep, "/")}
	}
	if _, err := exec.LookPath("java"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v; CI=true, so this fails rather than skips", ErrJavaNotFound)
		}
		t.Skipf("skipping: %v; install Java 17+ or set %s", ErrJavaNotFound, EndpointEnv)
	}
	shared.once.Do(func() {
		// Start bounds the JVM's start-up itself, after a first install.
		shared.server, shared.err = Start(context.Background(), Options{Progress: os.Stderr})
		if shared.err == nil && testing.Verbose() {
			fmt.Fprintf(os.Stderr, "dynamolocal: DynamoDB Local at %s, started in %v\n",
				shared.server.Endpoint(), shared.server.StartupTime().Round(time.Millisecond))
		}
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.server
}

// TemplateTableForTest creates, in the test binary's shared emulator, the
// table template.yaml declares as logicalID, under a name unique to t that
// starts with prefix, and returns the emulator and the name.
func TemplateTableForTest(t testing.TB, logicalID, prefix string) (*Server, string) {
	t.Helper()
	srv := ForTest(t)
	tmpl, err := samtemplate.LoadRepo()
	if err != nil {
		t.Fatal(err)
	}
	name := UniqueName(t, prefix)
	in, err := tmpl.TableInput(logicalID, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.CreateTable(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	return srv, name
}

// Main runs the package's tests and then stops the shared emulator, if one
// was started. Use it as the whole TestMain:
//
//	func TestMain(m *testing.M) { dynamolocal.Main(m) }
func Main(m *testing.M) {
	code := m.Run()
	if shared.server != nil {
		if err := shared.server.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			if code == 0 {
				code = 1
			}
		}
	}
	os.Exit(code)
}

var nameSeq atomic.Uint64

// UniqueName returns a table name that no other test — in this binary or, via
// a shared MCPFN_DYNAMODB_ENDPOINT, in another — will use: prefix, the test's
// name, a sequence number and a random suffix, restricted to the characters
// and length DynamoDB allows in table names.
func UniqueName(t testing.TB, prefix string) string {
	t.Helper()
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	test := sanitizeName(t.Name())
	if len(test) > 120 {
		test = test[:120]
	}
	return fmt.Sprintf("%s-%s-%d-%s", sanitizeName(prefix), test, nameSeq.Add(1), hex.EncodeToString(rnd[:]))
}

// sanitizeName keeps the characters allowed in table names ([A-Za-z0-9_.-])
// and turns the rest (subtest slashes, spaces) into '_'.
func sanitizeName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '.', r == '-':
			return r
		}
		return '_'
	}, s)
}
