package gateway

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/internal/lambdatest"
	"github.com/mcpfn/mcpfn/internal/secretsstandin"
	"github.com/mcpfn/mcpfn/mcptool"
	"github.com/mcpfn/mcpfn/wire"
)

// The gateway's own overhead per call: HTTP in → envelope → Invoke request
// out → answer mapped back, against an Invoke API that answers at once with a
// fixed result. The baseline is a go-sdk server running a handler that
// returns the same result in process, behind the same streamable handler
// options and the same HTTP path. Both include the in-process client's own
// cost, so the difference is what the gateway adds. cpu-ns/op is the
// process's CPU time per call, which other load on the machine does not
// inflate the way it inflates ns/op.
//
//	go test -run '^$' -bench . -benchmem -count 6 ./gateway/

const benchCall = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo_call","arguments":{"entityId":"bench-1"}}}`

var benchResult = &mcp.CallToolResult{
	Content:           []mcp.Content{&mcp.TextContent{Text: `{"entityId":"bench-1"}`}},
	StructuredContent: json.RawMessage(`{"entityId":"bench-1"}`),
}

func benchPost(b *testing.B, url string) {
	b.Helper()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for b.Loop() {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(benchCall))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "bench-1") {
			b.Fatalf("%d %s", resp.StatusCode, body)
		}
	}
	// CPU time per call of the whole in-process round trip (client, gateway,
	// Invoke API): a steadier measure than ns/op on a shared machine.
	if cpu := processCPU() - cpu0; cpu > 0 {
		b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
	}
}

func benchTool(b *testing.B) *adapter.Tool {
	return testCatalog(b).echo
}

// BenchmarkInProcessSDK is the baseline: the handler runs in the MCP server.
func BenchmarkInProcessSDK(b *testing.B) {
	server := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	mt, err := mcptool.Of(benchTool(b))
	if err != nil {
		b.Fatal(err)
	}
	server.AddTool(mt, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return benchResult, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{
		Stateless: true, JSONResponse: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	srv := httptest.NewServer(h)
	defer srv.Close()
	benchPost(b, srv.URL+"/mcp")
}

func benchGateway(b *testing.B, invoker Invoker) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	if invoker == nil {
		answer, _ := json.Marshal(wire.EnvelopeResponse{Version: "1", CallID: "c", Result: mustJSON(benchResult)})
		api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(answer)
		}))
		defer api.Close()
		b.Setenv("AWS_ENDPOINT_URL_LAMBDA", api.URL)
		b.Setenv("AWS_REGION", "us-east-1")
		b.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
		b.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
		b.Setenv("AWS_EC2_METADATA_DISABLED", "true")
		b.Setenv("AWS_CONFIG_FILE", "/nonexistent")
		b.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	}
	g, err := New(Config{
		Tools: []*adapter.Tool{benchTool(b)}, Functions: map[string]string{"echo_call": "fn-echo"},
		Auth: AuthNone, Lambda: invoker, Logger: quiet,
		Signer: lambdatest.Signer(map[string]string{"echo_call": "fn-echo"}),
	})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	srv := httptest.NewServer(g)
	defer srv.Close()
	benchPost(b, srv.URL+"/mcp")
}

// BenchmarkGateway forwards through the real Lambda SDK client to an
// in-process Invoke API over HTTP.
func BenchmarkGateway(b *testing.B) { benchGateway(b, nil) }

// BenchmarkGatewayNoNetwork replaces the Lambda client with a stub that
// answers at once: the gateway's own code (front, envelope, mapping) alone.
func BenchmarkGatewayNoNetwork(b *testing.B) {
	answer, _ := json.Marshal(wire.EnvelopeResponse{Version: "1", CallID: "c", Result: mustJSON(benchResult)})
	benchGateway(b, stubInvoker(func(in *lambda.InvokeInput) *lambda.InvokeOutput {
		return &lambda.InvokeOutput{StatusCode: 200, Payload: answer}
	}))
}

type stubInvoker func(*lambda.InvokeInput) *lambda.InvokeOutput

func (s stubInvoker) Invoke(_ context.Context, in *lambda.InvokeInput, _ ...func(*lambda.Options)) (*lambda.InvokeOutput, error) {
	return s(in), nil
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// BenchmarkNew is the gateway's own part of a cold start, as
// cmd/mcpfn-gateway runs it in JWT mode: the call keys and the session key
// read through the SDK from the Secrets Manager stand-in, the issuer's key
// set fetched, the Lambda client built from the environment, the MCP
// server built. cpu-ns/op includes the stand-in's and the issuer's side of
// those reads (they run in this process).
//
//	go test -run '^$' -bench BenchmarkNew -cpuprofile new.pprof ./gateway/
func BenchmarkNew(b *testing.B) {
	// As on Lambda: no custom CA bundle for the SDK to parse at every
	// LoadDefaultConfig (a developer's machine may set one).
	b.Setenv("AWS_CA_BUNDLE", "")
	e := newEnv(b)
	e.secrets.Generate("bench-session-key", 64)
	cfg := e.cfgUsed
	cfg.SessionKeySecret = secretsstandin.ARN("bench-session-key")
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for b.Loop() {
		g, err := New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		_ = g.Close()
	}
	if cpu := processCPU() - cpu0; cpu > 0 {
		b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
	}
}
