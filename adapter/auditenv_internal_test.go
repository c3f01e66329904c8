package adapter

import (
	"context"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"io"
	"net"
	"os"
	"strings"
	"testing"
)

// stderrOf runs f and returns what it wrote to os.Stderr.
func stderrOf(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stderr
	os.Stderr = w
	done := make(chan string)
	go func() { b, _ := io.ReadAll(r); done <- string(b) }()
	defer func() { os.Stderr = old }()
	f()
	w.Close()
	return <-done
}

// TestAuditModeFromEnvironment: the mode MCPFN_AUDIT_MODE asks for, and
// the fallback to before-response — logged once, never unaudited — when
// the extension cannot register (here: nothing serves the Runtime API;
// under the emulator a late registration's 403 is
// TestRegistrationClosesAtTheRuntimesFirstNext in internal/lambdaext).
func TestAuditModeFromEnvironment(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	t.Setenv("MCPFN_AUDIT_TABLE", "audit")
	t.Setenv("AWS_REGION", "us-east-1")
	for _, tc := range []struct {
		name, api, mode  string
		wantErr, wantLog bool
	}{
		{name: "not on Lambda", api: "", mode: ""},
		{name: "asked for, not on Lambda", api: "", mode: AuditAfterResponse, wantLog: true},
		{name: "registration fails", api: closed, mode: "", wantLog: true},
		{name: "before-response asked for", api: closed, mode: AuditBeforeResponse},
		{name: "unknown mode", api: closed, mode: "later", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("AWS_LAMBDA_RUNTIME_API", tc.api)
			t.Setenv(EnvAuditMode, tc.mode)
			var env environmentAudit
			var err error
			log := stderrOf(t, func() {
				env, err = auditFromEnv(context.Background(), func() (aws.Config, error) { return awsconfig.LoadDefaultConfig(context.Background()) })
			})
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			if tc.wantErr {
				return
			}
			if env.auditor == nil || env.queue != nil || env.ext != nil {
				t.Errorf("%+v: want an auditor writing before the response", env)
			}
			if got := strings.Count(log, "written before the response"); got != map[bool]int{true: 1}[tc.wantLog] {
				t.Errorf("log %q", log)
			}
		})
	}
}
