package gateway

import (
	"net"
	"net/http"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
)

// The Invoke API's ways of failing after it has read the request: the
// function may have run, so a destructive call must not be sent again.
var (
	serviceError500 = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Amzn-ErrorType", "ServiceException")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(`{"Type":"Service","message":"internal failure"}`))
	}
	resetAfterRead = func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err)
		}
		if tc, ok := conn.(interface{ SetLinger(int) error }); ok {
			_ = tc.SetLinger(0) // RST, not FIN
		}
		_ = conn.Close()
	}
	throttle429 = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Amzn-ErrorType", "TooManyRequestsException")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`{"Reason":"ReservedFunctionConcurrentInvocationLimitExceeded","Type":"User","message":"Rate Exceeded."}`))
	}
)

func TestDestructiveCallIsNeverResentOnceItMayHaveRun(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.InvokeAttempts = 3 })
	cs := e.mustConnect(t, "c", "", bearer(e.iss.token(t, "alice", nil)))
	for _, c := range []struct {
		name, tool, fn string
		h              http.HandlerFunc
		attempts       int
	}{
		// The function may have run: exactly one invocation.
		{"destructive 500", "flaky_delete", "fn-flaky-delete", serviceError500, 1},
		{"destructive reset", "flaky_delete", "fn-flaky-delete", resetAfterRead, 1},
		// Lambda refused before running anything: retried as before.
		{"destructive throttle", "flaky_delete", "fn-flaky-delete", throttle429, 3},
		// Other tools keep the SDK's retries.
		{"read-only 500", "flaky_get", "fn-flaky", serviceError500, 3},
		{"read-only reset", "flaky_get", "fn-flaky", resetAfterRead, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.api.setMisbehave(c.fn, c.h)
			defer e.api.setMisbehave(c.fn, nil)
			before := e.api.count(c.fn)
			te := toolErrorOf(t, callTool(t, cs, c.tool, map[string]any{"entityId": "r-1"}))
			if got := e.api.count(c.fn) - before; got != c.attempts {
				t.Errorf("%d invocations, want %d (%+v)", got, c.attempts, te)
			}
			if c.attempts == 1 && te.Retryable {
				t.Errorf("a destructive call that may have run is retryable: %+v", te)
			}
		})
	}
}

// countingTransport counts the HTTP requests the SDK tries to send.
type countingTransport struct {
	mu sync.Mutex
	n  int
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

func TestDestructiveCallIsRetriedWhenTheConnectionWasRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String()
	_ = ln.Close() // nothing listens there now
	ct := &countingTransport{}
	client := lambda.New(lambda.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(refused),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""),
		HTTPClient:   &http.Client{Transport: ct},
	})
	e := newEnv(t, func(c *Config) { c.Lambda = client; c.InvokeAttempts = 3 })
	cs := e.mustConnect(t, "c", "", bearer(e.iss.token(t, "alice", nil)))
	te := toolErrorOf(t, callTool(t, cs, "flaky_delete", map[string]any{"entityId": "r-2"}))
	if ct.n != 3 {
		t.Errorf("%d attempts, want 3: a refused connection sent nothing (%+v)", ct.n, te)
	}
}
