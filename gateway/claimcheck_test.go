package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/claimcheck"
	"github.com/mcpfn/mcpfn/internal/claimtest"
	"github.com/mcpfn/mcpfn/wire"
)

// testClaimCheck is the functions' claim check in these tests: a result
// past 2,000 bytes is stored, a blob of 500 bytes or more apart.
var testClaimCheck = adapter.ClaimCheck{AnswerBytes: 2000, TaskBytes: 2000, BlobBytes: 500}

type bigIn struct {
	N    int    `json:"n"`
	Kind string `json:"kind"`
}

func bigBytes(n int) []byte { return bytes.Repeat([]byte{0xff, 0, 'b'}, n/3+1)[:n] }

// bigTool answers N bytes of text or of a blob resource.
var bigTool = adapter.MustDefine(adapter.ToolDef[bigIn, adapter.Content]{
	Name: "big_get", ReadOnly: true,
	Handler: func(_ context.Context, _ *adapter.Call, in bigIn) (adapter.Content, error) {
		b := adapter.Text(strings.Repeat("t", in.N))
		if in.Kind == "blob" {
			b = adapter.BlobResource("file:///data/report.bin", "application/x-report", bigBytes(in.N))
		}
		return adapter.Content{Blocks: []adapter.Block{adapter.Text("head"), b}, Structured: nil}, nil
	},
})

type argsIn struct {
	Data string `json:"data"`
}

type argsOut struct {
	Bytes  int    `json:"bytes"`
	SHA256 string `json:"sha256"`
	Stored string `json:"stored,omitempty"`
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// argsTool takes arguments up to 64 KiB and says what it got, and from
// where.
var argsTool = adapter.MustDefine(adapter.ToolDef[argsIn, argsOut]{
	Name: "args_put", MaxArgumentBytes: 64 << 10,
	Handler: func(_ context.Context, call *adapter.Call, in argsIn) (argsOut, error) {
		out := argsOut{Bytes: len(in.Data), SHA256: sha([]byte(in.Data))}
		if r := call.ArgumentsObject(); r != nil {
			out.Stored = r.Key
		}
		return out, nil
	},
})

// memRecorder keeps the gateway's rows.
type memRecorder struct {
	mu   sync.Mutex
	rows []audit.Row
}

func (m *memRecorder) Pending(context.Context, *audit.Row) (*audit.Row, error) { return nil, nil }
func (m *memRecorder) Late(context.Context, *audit.Row)                        {}
func (m *memRecorder) Record(_ context.Context, r *audit.Row) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rows = append(m.rows, *r)
}

func (m *memRecorder) of(callID string) []audit.Row {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []audit.Row
	for _, r := range m.rows {
		if r.CallID == callID {
			out = append(out, r)
		}
	}
	return out
}

// withPayloads gives the gateway and the functions an in-process payloads
// bucket, the two tools above, and small limits.
func withPayloads(t *testing.T, rec *memRecorder, edit ...func(*Config)) (envOption, *claimcheck.Store) {
	store, client := claimtest.Store(t)
	return func(c *Config) {
		c.Tools = append(c.Tools, bigTool, argsTool)
		c.Functions["big_get"], c.Functions["args_put"] = "fn-big", "fn-args"
		c.PayloadsBucket, c.Payloads = claimtest.Bucket, client
		c.MaxBodyBytes = 4096
		c.ArgumentLimits = ArgumentLimits{Invoke: 8 << 10}
		c.InlineResultBytes = 16 << 10
		if rec != nil {
			c.Recorder = rec
		}
		for _, e := range edit {
			e(c)
		}
	}, store
}

// rawCall posts one tools/call of tool with args as a raw JSON-RPC body.
func (e *env) rawCall(t *testing.T, tool string, args any, token string) (*http.Response, []byte) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args, "_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "1"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{}}}})
	h := bearer(token)
	h.Set("Mcp-Protocol-Version", "2026-07-28")
	h.Set("Mcp-Method", "tools/call")
	h.Set("Mcp-Name", tool)
	return e.post(t, string(body), h)
}

// TestLargeBodiesOnlyForToolsThatDeclareThem: past MCPFN_MAX_BODY_BYTES
// only a tools/call of a tool that declared MaxArgumentBytes is read, up
// to its declaration and framing; arguments too large for one Invoke are
// stored and reach the handler byte for byte; every other request keeps
// the small bound.
func TestLargeBodiesOnlyForToolsThatDeclareThem(t *testing.T) {
	opt, store := withPayloads(t, nil)
	e := newEnv(t, opt)
	tok := e.iss.token(t, "big-user", nil)
	data := strings.Repeat("d", 20<<10) // 20 KiB: past the 4 KiB bound and the 8 KiB Invoke limit

	resp, b := e.rawCall(t, "args_put", map[string]any{"data": data}, tok)
	var msg struct {
		Result struct {
			StructuredContent argsOut `json:"structuredContent"`
			IsError           bool    `json:"isError"`
		} `json:"result"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(b, &msg) != nil || msg.Result.IsError {
		t.Fatalf("a declared tool's 20 KiB call: %d %.300s", resp.StatusCode, b)
	}
	got := msg.Result.StructuredContent
	if got.Bytes != len(data) || got.SHA256 != sha([]byte(data)) || !strings.HasPrefix(got.Stored, "args_put/args/") {
		t.Fatalf("the handler got %+v", got)
	}
	out, err := store.Client.GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String(claimtest.Bucket), Key: aws.String(got.Stored)})
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := io.ReadAll(out.Body)
	out.Body.Close()
	if want := `{"data":"` + data + `"}`; string(stored) != want {
		t.Errorf("stored arguments %.100s…, want the canonical form", stored)
	}

	for name, send := range map[string]func() (*http.Response, []byte){
		"an undeclared tool": func() (*http.Response, []byte) {
			return e.rawCall(t, "echo_call", map[string]any{"entityId": data}, tok)
		},
		"past the declared": func() (*http.Response, []byte) {
			return e.rawCall(t, "args_put", map[string]any{"data": strings.Repeat("d", 130<<10)}, tok)
		},
		"a batch": func() (*http.Response, []byte) {
			return e.post(t, `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"args_put","arguments":{"data":"`+data+`"}}}]`, bearer(tok))
		},
		"another method": func() (*http.Response, []byte) {
			return e.post(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"pad":"`+data+`"}}`, bearer(tok))
		},
	} {
		if resp, b := send(); resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("%s: %d %.200s, want 413", name, resp.StatusCode, b)
		}
	}
}

// TestStoredResultsAreAnsweredInlineOrAsLinks: a result the function
// stored reaches the client as the function built it — text inline, a
// blob back in its embedded resource — up to the inline ceiling; above
// it, the blob is a resource_link to a presigned URL of its bytes.
func TestStoredResultsAreAnsweredInlineOrAsLinks(t *testing.T) {
	opt, _ := withPayloads(t, nil)
	e := newEnv(t, opt)
	cs := e.mustConnect(t, "big", "", bearer(e.iss.token(t, "big-user", nil)))

	res := callTool(t, cs, "big_get", bigIn{N: 5000, Kind: "text"})
	if tc, ok := res.Content[1].(*mcp.TextContent); res.IsError || !ok || tc.Text != strings.Repeat("t", 5000) {
		t.Fatalf("stored text: %+v", res.Content)
	}
	res = callTool(t, cs, "big_get", bigIn{N: 6000, Kind: "blob"})
	if er, ok := res.Content[1].(*mcp.EmbeddedResource); res.IsError || !ok || !bytes.Equal(er.Resource.Blob, bigBytes(6000)) ||
		er.Resource.URI != "file:///data/report.bin" || er.Resource.MIMEType != "application/x-report" {
		t.Fatalf("stored blob inline: %+v", res.Content)
	}
	res = callTool(t, cs, "big_get", bigIn{N: 20000, Kind: "blob"}) // 26.7 KB as base64: above 16 KiB
	link, ok := res.Content[1].(*mcp.ResourceLink)
	if res.IsError || !ok || link.Name != "report.bin" || link.MIMEType != "application/x-report" || link.Size == nil || *link.Size != 20000 {
		t.Fatalf("stored blob above the ceiling: %+v", res.Content)
	}
	resp, err := http.Get(link.URI)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Equal(got, bigBytes(20000)) || !strings.Contains(link.URI, "versionId=") || !strings.Contains(link.URI, "X-Amz-Expires=900") {
		t.Errorf("the link %s served %d bytes", link.URI, len(got))
	}
}

// TestAStoredResultIsServedOnlyIfItChecks: a function answering a
// reference outside its own call's results, one whose bytes are not its
// SHA-256, or one whose version is gone, gets its caller a clear error,
// never the bytes and never an empty result; the gateway's row says what
// the caller was told and names the object.
func TestAStoredResultIsServedOnlyIfItChecks(t *testing.T) {
	rec := &memRecorder{}
	opt, store := withPayloads(t, rec)
	e := newEnv(t, opt)
	cs := e.mustConnect(t, "big", "", bearer(e.iss.token(t, "big-user", nil)))
	ctx := t.Context()
	doc := []byte(`{"content":[{"type":"text","text":"from elsewhere"}]}`)
	other, err := store.Put(ctx, "echo_call/results/x/a1", claimcheck.JSON, doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		ref  func(callID string) wire.ObjectRef
		code adapter.Code
		msg  string
	}{
		{"another tool's result", func(string) wire.ObjectRef { return other }, adapter.CodeInternal, "does not accept"},
		{"another SHA-256", func(id string) wire.ObjectRef {
			r, _ := store.Put(ctx, "big_get/results/"+id+"/a1", claimcheck.JSON, doc)
			r.SHA256 = sha([]byte("something else"))
			return r
		}, adapter.CodeInternal, "not the one its function recorded"},
		{"a version that is gone", func(id string) wire.ObjectRef {
			r, _ := store.Put(ctx, "big_get/results/"+id+"/a1", claimcheck.JSON, doc)
			r.VersionID = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
			return r
		}, adapter.CodeUnavailable, "expired"},
		{"a result to link without a version to pin", func(id string) wire.ObjectRef {
			r, _ := store.Put(ctx, "big_get/results/"+id+"/a1", claimcheck.JSON, bytes.Repeat([]byte(" "), 20<<10))
			r.VersionID = ""
			return r
		}, adapter.CodeInternal, "does not accept"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.api.setMisbehave("fn-big", func(w http.ResponseWriter, r *http.Request) {
				var env wire.Envelope
				_ = json.NewDecoder(r.Body).Decode(&env)
				ref := tc.ref(env.CallID)
				_ = json.NewEncoder(w).Encode(wire.EnvelopeResponse{Version: "1", CallID: env.CallID, ResultRef: &ref})
			})
			res := callTool(t, cs, "big_get", bigIn{N: 1})
			te := toolErrorOf(t, res)
			if te.Error != string(tc.code) || !strings.Contains(te.Message, tc.msg) || bytes.Contains([]byte(textOf(res)), []byte("from elsewhere")) {
				t.Fatalf("error %+v", te)
			}
			rows := rec.of(te.callID())
			if len(rows) != 1 || rows[0].ErrorCode != string(tc.code) || rows[0].Writer != audit.GatewayWriter || rows[0].ResultObject == nil || rows[0].Outcome != "" {
				t.Errorf("gateway rows %+v", rows)
			}
		})
	}
}
