package lambdaext_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/mcpfn/mcpfn/adapter/internal/lambdaext"
	"github.com/mcpfn/mcpfn/internal/toolcache"
)

// These tests run the test binary itself as a function's bootstrap under
// the pinned Runtime Interface Emulator (from the per-user cache, as the
// local stack runs it), so the client speaks to the real Extensions API
// state machine.

const (
	envBootstrap = "LAMBDAEXT_TEST_BOOTSTRAP" // set: this process is the bootstrap
	envDir       = "LAMBDAEXT_TEST_DIR"
)

func TestMain(m *testing.M) {
	if os.Getenv(envBootstrap) != "" {
		bootstrap()
		return
	}
	os.Exit(m.Run())
}

// answer is what the bootstrap's handler returns.
type answer struct {
	RequestID  string `json:"requestId"`
	LateClosed bool   `json:"lateClosed"`
	LateError  string `json:"lateError"`
}

// bootstrap is a function with an internal extension registered before
// lambda.Start. Its handler hands a "flush" to a goroutine that finishes
// 200 ms after the answer; the extension's done waits for it and then
// leaves a file named after the request: only then may it call next.
func bootstrap() {
	api, dir := os.Getenv("AWS_LAMBDA_RUNTIME_API"), os.Getenv(envDir)
	go func() { // no orphan when the emulator is killed
		for ppid := os.Getppid(); os.Getppid() == ppid; time.Sleep(100 * time.Millisecond) {
		}
		os.Exit(0)
	}()
	ext, err := lambdaext.Register(context.Background(), api, "lambdaext-test", "INVOKE")
	if err != nil {
		fmt.Fprintln(os.Stderr, "register:", err)
		os.Exit(2)
	}
	flushed := make(chan string, 16)
	go func() {
		err := ext.Run(context.Background(), func(ev lambdaext.Event) {
			for id := range flushed {
				if id == ev.RequestID {
					break
				}
			}
			_ = os.WriteFile(filepath.Join(dir, ev.RequestID), []byte(strconv.FormatInt(ev.DeadlineMs, 10)), 0o600)
		})
		fmt.Fprintln(os.Stderr, "run:", err)
	}()
	lambda.Start(func(ctx context.Context, _ json.RawMessage) (answer, error) {
		lc, _ := lambdacontext.FromContext(ctx)
		_, late := lambdaext.Register(ctx, api, "lambdaext-late", "INVOKE")
		go func() {
			time.Sleep(200 * time.Millisecond) // the stand-in of an audit write
			flushed <- lc.AwsRequestID
		}()
		a := answer{RequestID: lc.AwsRequestID, LateClosed: errors.Is(late, lambdaext.ErrRegistrationClosed)}
		if late != nil {
			a.LateError = late.Error()
		}
		return a, nil
	})
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// emulator starts the pinned RIE with this test binary as the bootstrap;
// it returns the invoke URL.
func emulator(t *testing.T, dir string) string {
	t.Helper()
	tools, err := toolcache.Default(os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	rie, err := tools.Emulator(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	addr, api := freePort(t), freePort(t)
	cmd := exec.Command(rie, "--log-level", "error", "--runtime-interface-emulator-address", addr, "--runtime-api-address", api, os.Args[0])
	cmd.Env = append(os.Environ(), envBootstrap+"=1", envDir+"="+dir, "AWS_LAMBDA_FUNCTION_TIMEOUT=5")
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("emulator log:\n%s", log.String())
		}
	})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the emulator did not listen")
		}
	}
	return "http://" + addr + "/2015-03-31/functions/function/invocations"
}

// TestInvocationEndsOnlyWhenTheExtensionCallsNext: under the emulator, an
// extension registered before lambda.Start takes part in every
// invocation: the invocation ends (the emulator answers, the next invoke
// may start) only after the extension has finished with it — here, after
// its flush, 200 ms after the handler answered. A registration after the
// runtime's first /next is refused with ErrRegistrationClosed.
func TestInvocationEndsOnlyWhenTheExtensionCallsNext(t *testing.T) {
	dir := t.TempDir()
	url := emulator(t, dir)
	for i := range 2 {
		res, err := http.Post(url, "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		var a answer
		if err := json.Unmarshal(body, &a); err != nil || a.RequestID == "" {
			t.Fatalf("invoke %d: HTTP %d %s", i, res.StatusCode, body)
		}
		deadline, err := os.ReadFile(filepath.Join(dir, a.RequestID))
		if err != nil {
			t.Errorf("invoke %d answered before the extension finished with it: %v", i, err)
		} else if ms, _ := strconv.ParseInt(string(deadline), 10, 64); ms <= time.Now().UnixMilli() {
			t.Errorf("invoke %d: the INVOKE event's deadline %d is not in the future", i, ms)
		}
		if !a.LateClosed {
			t.Errorf("a registration after the runtime's first next: %q, want ErrRegistrationClosed", a.LateError)
		}
	}
}
