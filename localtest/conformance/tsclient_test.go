package conformance_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/localtest/conformance"
)

// The TypeScript SDK v2 client's check script and the packages it needs,
// installed by `make deps` with the Inspector and the suite.
const (
	tsClientScript  = "tools/node/tsclient-check.mjs"
	tsClientPackage = nodeDir + "/@modelcontextprotocol/ext-tasks/package.json"
)

// tsCancelSeconds is how long a call the script cancels would run: less
// than a fixture's 10-second function timeout, so a handler whose context
// ends before its work did was stopped by the cancel, never by the timeout.
const tsCancelSeconds = 8

// tsCancelRule is what each way the client cancels promises: the
// specification's words, and docs/long-running.md's where the
// specification leaves it to the server.
var tsCancelRule = map[string]string{
	"notifications/cancelled": "2025-11-25 cancellation: receivers SHOULD stop processing the cancelled request",
	"tasks/cancel":            "Tasks v2 cancellation is cooperative; mcpfn's tasks/cancel ends the handler's context within one watch interval (docs/long-running.md)",
	"closed stream":           "2026-07-28 Streamable HTTP: closing the SSE response stream MUST be treated by the server as cancellation of that request, and it SHOULD stop work as soon as practical",
}

// tsReport is what the script prints.
type tsReport struct {
	Checks []struct {
		Era    string `json:"era"`
		Name   string `json:"name"`
		OK     bool   `json:"ok"`
		Detail string `json:"detail"`
	} `json:"checks"`
	Cancels []struct {
		Era     string `json:"era"`
		How     string `json:"how"`
		Label   string `json:"label"`
		Seconds int    `json:"seconds"`
	} `json:"cancels"`
	// Trace is every POST of the SDK client: era, method, id, HTTP status.
	Trace []json.RawMessage `json:"trace"`
}

// TestTypeScriptSDKClient drives the stack's JWT gateway with a client
// nobody here wrote: the official MCP TypeScript SDK v2 client and its
// Tasks-extension package (tools/node/tsclient-check.mjs), in the legacy
// era (initialize) and in 2026-07-28. Each of the script's checks is a
// subtest: connect, tools/list, a call, progress notifications, JSON-RPC
// errors that reach the client as JSON-RPC errors, a task to completion and
// a task cancelled through the Tasks package (2026-07-28; the legacy era
// has no Tasks v2, and the package runs the call as it is), and a call the
// client cancels. A cancel must stop the handler (the spec: 2025-11-25's
// notifications/cancelled, 2026-07-28's closed stream, the extension's
// tasks/cancel): slow_compute logs StoppedMarker when its context ends
// before its work.
func TestTypeScriptSDKClient(t *testing.T) {
	node, _ := requireNode(t, tsClientPackage)
	script := filepath.Join(repoRoot(t), tsClientScript)
	st := startStack(t)
	// A caller of its own: cancel markers are keyed by caller and request
	// id, and every SDK client numbers its requests from 0.
	sub := "ts-sdk-" + rand.Text()[:8]
	token, err := st.MintToken(map[string]any{"sub": sub, "scope": "broadcasts:write"})
	if err != nil {
		t.Fatal(err)
	}
	label := func(what string) string { return sub + "-" + what }
	cfg, _ := json.Marshal(map[string]any{
		"url": st.MCPURL(), "token": token,
		"createTool": "broadcast_create", "progressTool": conformance.ToolProgress, "slowTool": conformance.ToolSlowCompute,
		"cancelSeconds": tsCancelSeconds,
		"labels": map[string]string{
			"legacyImmediate": label("legacy-immediate"), "legacyCancel": label("legacy-cancel"),
			"modernTask": label("modern-task"), "modernTaskCancel": label("modern-task-cancel"), "modernCancel": label("modern-cancel"),
		},
	})
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	stdout, stderr, runErr := runNode(t, ctx, node, script, string(cfg))
	var rep tsReport
	if err := json.Unmarshal([]byte(strings.TrimSpace(stdout)), &rep); err != nil || len(rep.Checks) == 0 {
		t.Fatalf("the script printed no report (%v, exit %v)\nstdout: %s\nstderr: %s", err, runErr, stdout, stderr)
	}
	failed := false
	for _, c := range rep.Checks {
		t.Run(c.Era+"/"+c.Name, func(t *testing.T) {
			if !c.OK {
				failed = true
				t.Error(c.Detail)
			} else if c.Detail != "" {
				t.Log(c.Detail)
			}
		})
	}
	if failed != (runErr != nil) {
		t.Errorf("the script exited %v, but its checks say failed=%v", runErr, failed)
	}
	defer func() {
		if t.Failed() {
			var b strings.Builder
			for _, e := range rep.Trace {
				b.Write(e)
				b.WriteByte('\n')
			}
			t.Logf("the SDK client's requests:\n%s\nthe script's stderr:\n%s", b.String(), stderr)
		}
	}()

	logPath := st.LogPath(functionName(conformance.ToolSlowCompute))
	for _, c := range rep.Cancels {
		t.Run(c.Era+"/"+c.How+" stops the handler", func(t *testing.T) {
			// The handler of a call that was not stopped runs its c.Seconds
			// to the end and logs nothing; one that was logs the marker,
			// with how far it got.
			deadline := time.Now().Add(time.Duration(c.Seconds)*time.Second + 5*time.Second)
			for {
				if after, ok := stoppedAfter(t, logPath, c.Label); ok {
					if after >= c.Seconds {
						t.Errorf("the handler stopped after %ds of %ds: not by the cancel", after, c.Seconds)
					}
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s (%s era) did not stop the handler (%s): no %q line for %s in %s",
						c.How, c.Era, tsCancelRule[c.How], conformance.StoppedMarker, c.Label, logPath)
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
}

// stoppedLine is slow_compute's StoppedMarker line: label, then how far it
// got ("after 2s: context canceled").
var stoppedLine = regexp.MustCompile(regexp.QuoteMeta(conformance.StoppedMarker) + `(\S+) after (\d+)s`)

// stoppedAfter reports whether the function's log has the StoppedMarker of
// label, and the whole seconds its handler had worked.
func stoppedAfter(t *testing.T, logPath, label string) (int, bool) {
	t.Helper()
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range stoppedLine.FindAllStringSubmatch(string(b), -1) {
		if m[1] == label {
			n, _ := strconv.Atoi(m[2])
			return n, true
		}
	}
	return 0, false
}
