package localtest_test

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/mcpfn/mcpfn/localtest"
)

// postResponseFunction is localtest/internal/postresponse: a function with
// an internal extension that works on after each response. Its concurrency
// limit of 1 makes "the same environment" observable on the Invoke API.
const postResponseFunction = "PostResponseFunction"

// postResponseStack starts a small stack of that function alone, next to
// the shared one (and on its DynamoDB).
func postResponseStack(t *testing.T) *localtest.Stack {
	t.Helper()
	cfg := testConfig(t.TempDir())
	cfg.DynamoDBEndpoint = stack.DynamoDBEndpoint()
	cfg.PoolSize = 1
	cfg.Functions = []localtest.FunctionSpec{}
	cfg.ExtraFunctions = []localtest.FunctionSpec{{Name: postResponseFunction, Package: "./localtest/internal/postresponse", MaxConcurrency: 1}}
	cfg.ExtraTools = nil
	st, err := localtest.Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// postResponse is the fixture's answer.
type postResponse struct {
	PID       int    `json:"pid"`
	RequestID string `json:"requestId"`
}

func decodePostResponse(t *testing.T, b []byte) postResponse {
	t.Helper()
	var r postResponse
	if err := json.Unmarshal(b, &r); err != nil || r.PID == 0 {
		t.Fatalf("the fixture answered %q (%v)", b, err)
	}
	return r
}

// TestEarlyRelease checks that the local stack answers as Lambda does when
// a function has work left after its response (an extension subscribed to
// INVOKE, as the after-response audit): the caller gets the response when
// the runtime posts it, the environment takes no new invoke until every
// extension is done, and a process that dies after responding still gave
// its caller a 200. Every check is on the order of events: the fixture's
// extension holds the invoke until the test sends it SIGUSR1.
func TestEarlyRelease(t *testing.T) {
	st := postResponseStack(t)
	ctx := t.Context()
	hold := []byte(`{"after":"hold"}`)

	t.Run("held emulator", func(t *testing.T) {
		h, err := st.Hold(ctx, postResponseFunction)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		a, err := h.Call(ctx, hold)
		if err != nil {
			t.Fatal(err)
		}
		ra := decodePostResponse(t, a.Payload)
		// The extension is parked until SIGUSR1: the caller has the
		// response, the environment is not done.
		tl := a.Timeline()
		if !a.Early || a.Status != 200 || tl.Posted.IsZero() || tl.RuntimeNext.IsZero() {
			t.Fatalf("first call: early %v, status %d, timeline %+v: want the response released at the runtime's POST", a.Early, a.Status, tl)
		}
		if len(tl.ExtensionNext) != 0 || !tl.Released.IsZero() {
			t.Fatalf("the caller was answered only after the extension (timeline %+v)", tl)
		}

		// The next call waits for the environment.
		type result struct {
			inv *localtest.Invocation
			err error
		}
		second := make(chan result, 1)
		go func() {
			inv, err := h.Call(ctx, []byte(`{}`))
			second <- result{inv, err}
		}()
		if err := syscall.Kill(ra.PID, syscall.SIGUSR1); err != nil {
			t.Fatal(err)
		}
		r := <-second
		if r.err != nil {
			t.Fatal(r.err)
		}
		if err := a.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		tl = a.Timeline()
		if len(tl.ExtensionNext) != 1 || tl.Released.Before(tl.ExtensionNext[0]) || a.PostRuntime() <= 0 {
			t.Fatalf("first call's timeline %+v, post-runtime %v: want the extension's next, then the release", tl, a.PostRuntime())
		}
		if a.PostRuntime() < tl.Released.Sub(tl.ExtensionNext[0]) || a.PostRuntime() < tl.ExtensionNext[0].Sub(tl.Posted) {
			t.Errorf("post-runtime %v does not span the POST (%v) to the release (%v)", a.PostRuntime(), tl.Posted, tl.Released)
		}
		tl2 := r.inv.Timeline()
		if !tl2.RuntimeNext.After(tl.Released) {
			t.Errorf("the second invoke reached the runtime at %v, before the first was released at %v", tl2.RuntimeNext, tl.Released)
		}
		if rb := decodePostResponse(t, r.inv.Payload); rb.PID != ra.PID {
			t.Errorf("the second call ran in process %d, not %d: the environment was not reused", rb.PID, ra.PID)
		}
	})

	t.Run("post-runtime duration", func(t *testing.T) {
		// The experiment: a 300 ms flush after the response. The
		// caller is answered at the response; the 300 ms show as the
		// post-runtime duration (a lower bound: the extension sleeps after
		// the emulator accepted the response).
		h, err := st.Hold(ctx, postResponseFunction)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		for i, cold := range []bool{true, false} {
			inv, err := h.Call(ctx, []byte(`{"after":"delay","delayMs":300}`))
			if err != nil {
				t.Fatal(err)
			}
			if err := inv.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			tl := inv.Timeline()
			t.Logf("call %d (cold %v): caller %v, runtime POST at %v, accepted at %v, post-runtime %v", i, cold, inv.Duration(), tl.Posted.Sub(inv.Sent), tl.Accepted.Sub(inv.Sent), inv.PostRuntime())
			if !inv.Early || inv.PostRuntime() < 300*time.Millisecond || len(tl.ExtensionNext) != 1 {
				t.Errorf("early %v, post-runtime %v, extension nexts %d: want an early answer and ≥ 300ms after it", inv.Early, inv.PostRuntime(), len(tl.ExtensionNext))
			}
		}
	})

	c := lambda.New(lambda.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(st.InvokeURL()),
		Credentials:  credentials.NewStaticCredentialsProvider(localtest.OperatorKeyID, localtest.OperatorSecret, ""),
		Retryer:      aws.NopRetryer{},
	})
	invoke := func(payload []byte) (*lambda.InvokeOutput, error) {
		return c.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(postResponseFunction), Payload: payload})
	}
	ok := func(t *testing.T, payload []byte) postResponse {
		t.Helper()
		out, err := invoke(payload)
		if err != nil {
			t.Fatal(err)
		}
		if out.FunctionError != nil {
			t.Fatalf("function error %s: %s", *out.FunctionError, out.Payload)
		}
		return decodePostResponse(t, out.Payload)
	}

	t.Run("Invoke API", func(t *testing.T) {
		if err := st.WaitIdle(ctx, postResponseFunction); err != nil {
			t.Fatal(err)
		}
		// Answered while the extension holds the invoke.
		a := ok(t, hold)
		// The only environment is busy until the extension is done: a
		// second invoke is throttled, never run in it.
		_, err := invoke([]byte(`{}`))
		var tooMany *types.TooManyRequestsException
		if !errors.As(err, &tooMany) {
			t.Fatalf("an invoke during the first one's extension work: %v, want TooManyRequestsException", err)
		}
		if err := syscall.Kill(a.PID, syscall.SIGUSR1); err != nil {
			t.Fatal(err)
		}
		if err := st.WaitIdle(ctx, postResponseFunction); err != nil {
			t.Fatal(err)
		}
		if b := ok(t, []byte(`{}`)); b.PID != a.PID {
			t.Errorf("after the extension finished, the invoke ran in process %d, not %d", b.PID, a.PID)
		}
		log, err := os.ReadFile(st.LogPath(postResponseFunction))
		if err != nil {
			t.Fatal(err)
		}
		if want := "POSTRUNTIME RequestId: " + a.RequestID; !strings.Contains(string(log), want) {
			t.Errorf("the function's log has no %q line", want)
		}
	})

	t.Run("process dies after responding", func(t *testing.T) {
		if err := st.WaitIdle(ctx, postResponseFunction); err != nil {
			t.Fatal(err)
		}
		// On Lambda the caller has its response; the emulator would answer
		// 502 Runtime.ExitError once the process is gone.
		a := ok(t, []byte(`{"after":"exit"}`))
		// No wait: the pool holds this invoke until the emulator has
		// answered (the runtime will never call next), then hands the
		// environment on; it starts a new process.
		if b := ok(t, []byte(`{}`)); b.PID == a.PID {
			t.Errorf("the invoke after the crash ran in the dead process %d", a.PID)
		}
	})
}
