package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/mcpfn/mcpfn/internal/lambdatest"
)

// countingInvoker answers every Invoke at once with a fixed result and
// counts them.
type countingInvoker struct{ n atomic.Int64 }

func (c *countingInvoker) Invoke(ctx context.Context, in *lambda.InvokeInput, _ ...func(*lambda.Options)) (*lambda.InvokeOutput, error) {
	c.n.Add(1)
	return &lambda.InvokeOutput{StatusCode: 200, Payload: []byte(`{"mcpfn":"1","result":{"content":[{"type":"text","text":"ok"}]}}`)}, nil
}

const fuzzMaxBatch = 4

// fuzzGateway is a gateway (auth none, batch cap 4) whose Invokes are
// counted, not sent.
func fuzzGateway(f *testing.F) (*Gateway, *countingInvoker) {
	inv := &countingInvoker{}
	cat := testCatalog(f)
	gw, err := New(Config{
		Tools: cat.tools(), Functions: cat.functions(), Auth: AuthNone, Lambda: inv,
		Signer:   lambdatest.Signer(cat.functions()),
		MaxBatch: fuzzMaxBatch, MaxBodyBytes: 64 << 10,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = gw.Close() })
	return gw, inv
}

var fuzzVersions = []string{"", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28", "garbage"}

// FuzzServeMCP drives the gateway's request parsing and batch splitting
// (serveMCP, serveBatch, peekMessage, dispatch) with arbitrary bodies: it
// must never panic, never invoke more functions than the batch cap allows,
// and answer with JSON-RPC whenever it answers with JSON.
func FuzzServeMCP(f *testing.F) {
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo_call","arguments":{"entityId":"x"}}}`
	calls := strings.Join(echoCalls(fuzzMaxBatch+1, 10), ",")
	for _, seed := range []string{
		call,
		"[" + call + "]",
		"[" + calls + "]",
		"[[" + calls + "],[" + calls + "]," + call + "]",
		"[[[[" + calls + "]]]]",
		`[{"jsonrpc":"2.0","method":"notifications/initialized"}]`,
		`[1,"a",null,true,{}]`,
		`[]`,
		` 	[` + call + `]`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":{"a":1},"method":"tools/call","params":{"name":"thing_delete"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"subscriptions/listen"}`,
		`{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"f","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"echo_call","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo_call","arguments":{"entityId":"x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
		"\xef\xbb\xbf[" + call + "]",
		`[` + call,
		`nul`,
	} {
		for v := range fuzzVersions {
			f.Add([]byte(seed), uint8(v))
		}
	}
	gw, inv := fuzzGateway(f)
	f.Fuzz(func(t *testing.T, body []byte, version uint8) {
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if v := fuzzVersions[int(version)%len(fuzzVersions)]; v != "" {
			req.Header.Set("Mcp-Protocol-Version", v)
		}
		before := inv.n.Load()
		rec := httptest.NewRecorder()
		gw.ServeHTTP(rec, req)
		if n := inv.n.Load() - before; n > fuzzMaxBatch {
			t.Fatalf("%d invokes from one request, the batch cap is %d", n, fuzzMaxBatch)
		}
		checkJSONRPCAnswer(t, rec)
	})
}

// checkJSONRPCAnswer fails unless the recorded answer is an accepted
// notification (202, no body), an HTTP-level refusal (4xx/5xx), or JSON-RPC:
// one response object, or a non-empty array of them.
func checkJSONRPCAnswer(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	body := bytes.TrimSpace(rec.Body.Bytes())
	mt, _, _ := mime.ParseMediaType(rec.Header().Get("Content-Type"))
	if mt != "application/json" {
		if rec.Code == http.StatusAccepted && len(body) == 0 || rec.Code >= 400 {
			return
		}
		t.Fatalf("status %d, content type %q: %q", rec.Code, mt, body)
	}
	if len(body) > 0 && body[0] == '[' {
		var msgs []json.RawMessage
		if err := json.Unmarshal(body, &msgs); err != nil || len(msgs) == 0 {
			t.Fatalf("batch answer %q: %v", body, err)
		}
		for _, m := range msgs {
			checkResponseObject(t, m)
		}
		return
	}
	checkResponseObject(t, body)
}

func checkResponseObject(t *testing.T, msg []byte) {
	t.Helper()
	var r struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result"`
		Error   *struct {
			Code    *int    `json:"code"`
			Message *string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(msg, &r); err != nil {
		t.Fatalf("response %q: %v", msg, err)
	}
	if r.JSONRPC != "2.0" || len(r.ID) == 0 || (r.Result == nil) == (r.Error == nil) {
		t.Fatalf("not a JSON-RPC response: %q", msg)
	}
	if r.Error != nil && (r.Error.Code == nil || r.Error.Message == nil) {
		t.Fatalf("error without code or message: %q", msg)
	}
}

// FuzzPeekMessage: the id it returns is always valid JSON, and never a
// panic whatever the bytes.
func FuzzPeekMessage(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"method":"m"}`, `{"id":null}`, `{"id":"x","method":7}`, `[]`, `{`, ``, `{"id":[1,{"a":2}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		id, _ := peekMessage(msg)
		if id != nil && !json.Valid(id) {
			t.Fatalf("id %q is not JSON", id)
		}
	})
}
