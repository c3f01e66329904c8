package adapter

import (
	"context"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"io"
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
// the fallback to before-response — logged once, never unaudited — where
// the after-response mode cannot run (not on Lambda). On Lambda it needs
// nothing of the Runtime API but the runtime's own loop: no registration
// that could fail.
func TestAuditModeFromEnvironment(t *testing.T) {
	const api = "127.0.0.1:9001" // never called here
	t.Setenv("MCPFN_AUDIT_TABLE", "audit")
	t.Setenv("AWS_REGION", "us-east-1")
	for _, tc := range []struct {
		name, api, mode  string
		wantErr, wantLog bool
		after            bool // the queue of the after-response mode
	}{
		{name: "not on Lambda", api: "", mode: ""},
		{name: "asked for, not on Lambda", api: "", mode: AuditAfterResponse, wantLog: true},
		{name: "on Lambda: after the response", api: api, mode: "", after: true},
		{name: "after-response asked for", api: api, mode: AuditAfterResponse, after: true},
		{name: "before-response asked for", api: api, mode: AuditBeforeResponse},
		{name: "unknown mode", api: api, mode: "later", wantErr: true},
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
			if env.auditor == nil || (env.queue != nil) != tc.after {
				t.Errorf("%+v: want an auditor, queued after the response %v", env, tc.after)
			}
			if got := strings.Count(log, "written before the response"); got != map[bool]int{true: 1}[tc.wantLog] {
				t.Errorf("log %q", log)
			}
		})
	}
}
