package localtest_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/gateway"
	"github.com/mcpfn/mcpfn/localtest"
)

// TestClaimCheckMemory prints docs/benchmarks.md's "Passing a 20 MB
// result" figures: the memory a broadcast_export of five 4 MiB files (a
// 21 MB zip) costs the function (its bootstrap's peak RSS) and the
// gateway, which runs in a process of its own as on Lambda (its peak RSS
// over the call, from a reset peak), and the client in this process (its
// peak live heap over the call, from a collected heap). With the default
// 12 MiB inline ceiling the archive is a resource_link (followed here); an
// 8.4 MB one is answered inline under it; with the ceiling raised past the
// 21 MB archive's base64 the gateway reads that back and answers it
// inline. Each case with a client that hashes the answer as it arrives
// and with the go-sdk client (which decodes the whole answer). Each case
// is a stack of its own, so the function's peak RSS is that case's.
func TestClaimCheckMemory(t *testing.T) {
	if os.Getenv(benchEnv) == "" {
		t.Skipf("set %s=1 to measure", benchEnv)
	}
	fmt.Printf("\nmachine: %s/%s, %d CPUs, Go %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
	for _, c := range []struct {
		name  string
		files int
		env   map[string]string
	}{
		{"5 files (21 MB zip), default 12 MiB ceiling: a link", 5, nil},
		{"2 files (8.4 MB zip), default 12 MiB ceiling: inline", 2, nil},
		{"5 files (21 MB zip), MCPFN_INLINE_RESULT_BYTES=64 MiB: inline", 5, map[string]string{gateway.EnvInlineResultBytes: strconv.Itoa(64 << 20)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := memoryStack(t, c.env)
			token, err := st.MintToken(map[string]any{"sub": unique("memory"), "scope": demoScope})
			if err != nil {
				t.Fatal(err)
			}
			cs := connectAs(t, st, token)
			channel := unique("memory")
			for i := range c.files {
				id, _ := call(t, cs, "broadcast_create", map[string]any{"channel": channel, "text": fmt.Sprintf("file %d", i)})["id"].(string)
				data := make([]byte, demoAttachmentBytes)
				_, _ = rand.Read(data)
				call(t, cs, "broadcast_attach", map[string]any{"id": id, "name": fmt.Sprintf("file-%d.bin", i), "contentType": "application/octet-stream", "data": data})
			}
			if b, err := os.ReadFile("/proc/loadavg"); err == nil {
				fmt.Printf("\n%s — load average: %s", c.name, b)
			}
			fmt.Printf("%-32s %8s %10s %14s %16s\n", "client", "answer", "took", "gateway RSS", "client heap")
			for range 3 {
				for _, client := range []string{"hashing as it reads", "go-sdk"} {
					m := startMemoryWatch(t, st.GatewayPID())
					start := time.Now()
					var answer int64
					if client == "go-sdk" {
						answer = exportGoSDK(t, st, cs, channel)
					} else {
						answer = exportHashing(t, st, token, channel)
					}
					took := time.Since(start)
					rss, heap := m.stop(t)
					fmt.Printf("%-32s %7.1fM %10v %+13.1fM %+15.1fM\n", client, float64(answer)/(1<<20), took.Round(time.Millisecond), float64(rss)/(1<<20), float64(heap)/(1<<20))
				}
			}
			fmt.Printf("gateway process: RSS %d MiB at the end, peak %d MiB since the last call's reset\n",
				procStatusMiBOf(t, st.GatewayPID(), "VmRSS:"), procStatusMiBOf(t, st.GatewayPID(), "VmHWM:"))
			peak, n := st.PeakRSS("BroadcastExportFunction")
			fmt.Printf("BroadcastExportFunction: peak RSS %.1f MiB (largest of %d bootstraps)\n", float64(peak)/(1<<20), n)
			peak, n = st.PeakRSS("BroadcastAttachFunction")
			fmt.Printf("BroadcastAttachFunction (%d attaches of 4 MiB): peak RSS %.1f MiB (largest of %d bootstraps)\n", c.files, float64(peak)/(1<<20), n)
		})
	}
}

// memoryStack is a stack of the demo's functions only, one warm emulator
// each, sharing the test stack's DynamoDB Local.
func memoryStack(t *testing.T, gatewayEnv map[string]string) *localtest.Stack {
	t.Helper()
	cfg := testConfig(t.TempDir())
	cfg.DynamoDBEndpoint = stack.DynamoDBEndpoint()
	cfg.PoolSize = 1
	cfg.ExtraFunctions, cfg.ExtraTools, cfg.GatewayEnv = nil, nil, gatewayEnv
	st, err := localtest.Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func connectAs(t *testing.T, st *localtest.Stack, token string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpfn-memory", Version: "1.0.0"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{
		Endpoint: st.MCPURL(), HTTPClient: &http.Client{Transport: bearer{token}, Timeout: time.Minute},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// exportGoSDK exports the channel with the go-sdk client, follows a link,
// and returns the archive's size.
func exportGoSDK(t *testing.T, st *localtest.Stack, cs *mcp.ClientSession, channel string) int64 {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "broadcast_export", Arguments: map[string]any{"channel": channel}})
	if err != nil || res.IsError {
		t.Fatalf("export: %v %s", err, text(res))
	}
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.EmbeddedResource:
			return int64(len(c.Resource.Blob))
		case *mcp.ResourceLink:
			n, _ := fetchHashing(t, st, c.URI)
			return n
		}
	}
	t.Fatal("no archive in the answer")
	return 0
}

// exportHashing exports the channel with a JSON-RPC POST whose answer is
// hashed as it arrives, never held (but for a small one, which may be a
// link to follow, hashed the same way); it returns the answer's size, or
// the linked archive's.
func exportHashing(t *testing.T, st *localtest.Stack, token, channel string) int64 {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{
		"name": "broadcast_export", "arguments": map[string]any{"channel": channel},
		"_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "mcpfn-memory", "version": "1"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		},
	}})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, st.MCPURL(), bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "broadcast_export")
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var small bytes.Buffer
	n, err := io.Copy(io.MultiWriter(sha256.New(), &capped{&small, 1 << 20}), resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("export: HTTP %d, %v", resp.StatusCode, err)
	}
	if n > 1<<20 {
		return n // answered inline
	}
	var msg struct {
		Result struct {
			Content []struct {
				Type string `json:"type"`
				URI  string `json:"uri"`
			} `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal(small.Bytes(), &msg); err != nil {
		t.Fatalf("export answered %.300s: %v", small.Bytes(), err)
	}
	for _, c := range msg.Result.Content {
		if c.Type == "resource_link" {
			n, _ := fetchHashing(t, st, c.URI)
			return n
		}
	}
	t.Fatalf("export answered %.300s: no archive", small.Bytes())
	return 0
}

// capped keeps at most n bytes written to it, and drops the rest.
type capped struct {
	buf *bytes.Buffer
	n   int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.n - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// fetchHashing GETs a link, hashing what it serves; it returns the size
// and the SHA-256.
func fetchHashing(t *testing.T, st *localtest.Stack, u string) (int64, string) {
	t.Helper()
	resp, err := st.S3HTTPClient().Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	h := sha256.New()
	n, err := io.Copy(h, resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET the link: HTTP %d, %v", resp.StatusCode, err)
	}
	return n, hex.EncodeToString(h.Sum(nil))
}

// memoryWatch follows one call: the gateway process's peak RSS from a
// reset peak, and this process's (the client's) live heap, sampled every
// millisecond from a collected start.
type memoryWatch struct {
	gateway           int // pid
	heapBase, rssBase int64
	peak              int64
	done              chan struct{}
	wg                sync.WaitGroup
}

func startMemoryWatch(t *testing.T, gateway int) *memoryWatch {
	t.Helper()
	runtime.GC()
	debug.FreeOSMemory()
	// 5 resets the process's peak RSS (VmHWM) to its current RSS.
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", gateway), []byte("5"), 0); err != nil {
		t.Skipf("cannot reset the gateway's peak RSS: %v", err)
	}
	m := &memoryWatch{gateway: gateway, heapBase: liveHeap(), rssBase: procStatusMiBOf(t, gateway, "VmRSS:"), done: make(chan struct{})}
	m.peak = m.heapBase
	m.wg.Go(func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-m.done:
				return
			case <-tick.C:
				m.peak = max(m.peak, liveHeap())
			}
		}
	})
	return m
}

// stop returns how far the gateway's RSS and this process's live heap rose
// above where they started (bytes).
func (m *memoryWatch) stop(t *testing.T) (gatewayRSS, clientHeap int64) {
	close(m.done)
	m.wg.Wait()
	return (procStatusMiBOf(t, m.gateway, "VmHWM:") - m.rssBase) << 20, m.peak - m.heapBase
}

func liveHeap() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}
