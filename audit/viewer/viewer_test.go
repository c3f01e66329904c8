package viewer_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/audit/viewer"
	"github.com/mcpfn/mcpfn/internal/dynamolocal"
)

func TestMain(m *testing.M) { dynamolocal.Main(m) }

const (
	traceID   = "1-6a1b2c3d-0123456789abcdef01234567"
	gatewayID = "aaaaaaaaaaaaaaa1"
	forwardID = "aaaaaaaaaaaaaaa2"
	hostile   = `<script>document.title="pwned"</script>`
)

var t0 = time.Now().UTC().Add(-time.Hour).Truncate(time.Second)

// world is an audit table in DynamoDB Local with a few rows, a segment
// file and a viewer over both.
type world struct {
	a      *audit.Auditor
	srv    *httptest.Server
	table  string
	client audit.DynamoAPI
}

func newWorld(t *testing.T) *world {
	t.Helper()
	ddb, name := dynamolocal.TemplateTableForTest(t, "AuditTable", "viewer")
	ctx := context.Background()
	a := audit.New(audit.Config{Table: name, Client: ddb.Client(ctx)})
	rows := []*audit.Row{
		{CallID: "c-ok", Tool: "broadcast_get", SpanID: "bbbbbbbbbbbbbbb1", ParentSpanID: forwardID, TraceID: traceID,
			StartedAt: t0.Add(2 * time.Millisecond), DurationMs: 5, OK: true, CallerSubject: "alice", CallerAuthMethod: "jwt",
			CallerIssuer: "https://issuer.example", Arguments: json.RawMessage(`{"id":"b-1"}`), Dimensions: map[string]string{"entityId": "b-1"},
			FunctionName: "BroadcastGetFunction", LambdaRequestID: "req-ok"},
		{CallID: "c-hostile", Tool: "broadcast_create", SpanID: "bbbbbbbbbbbbbbb2", TraceID: "1-6a1b2c3d-fedcba9876543210fedcba98",
			StartedAt: t0.Add(time.Second), DurationMs: 40, OK: false, ErrorCode: "INTERNAL", ErrorMessage: "internal error",
			RawError: "boom " + hostile, CallerSubject: "bob", CallerAuthMethod: "jwt", CallerIssuer: "https://issuer.example",
			UnverifiedCaller: "mallory" + hostile, Arguments: json.RawMessage(`{"title":` + quote(hostile) + `}`),
			Dimensions: map[string]string{"entityId": "b-2"}},
		{CallID: "c-old", Tool: "broadcast_get", SpanID: "bbbbbbbbbbbbbbb3", StartedAt: t0.Add(-48 * time.Hour), DurationMs: 1, OK: true},
	}
	for _, r := range rows {
		a.Record(ctx, r)
	}
	segs := filepath.Join(t.TempDir(), "xray.jsonl")
	lines := []string{
		doc(map[string]any{"trace_id": traceID, "id": gatewayID, "name": "GatewayFunction", "start_time": sec(t0), "end_time": sec(t0.Add(10 * time.Millisecond)),
			"annotations": map[string]any{"origin": "AWS::Lambda::Function"}}),
		doc(map[string]any{"trace_id": traceID, "id": forwardID, "parent_id": gatewayID, "type": "subsegment", "name": "BroadcastGetFunction",
			"start_time": sec(t0.Add(time.Millisecond)), "end_time": sec(t0.Add(9 * time.Millisecond)), "metadata": map[string]any{"mcpfn": map[string]any{"operation": "lambda:Invoke"}}}),
		doc(map[string]any{"trace_id": traceID, "id": "bbbbbbbbbbbbbbb1", "parent_id": forwardID, "type": "subsegment", "name": "broadcast_get",
			"start_time": sec(t0.Add(2 * time.Millisecond)), "end_time": sec(t0.Add(7 * time.Millisecond))}),
		doc(map[string]any{"trace_id": "1-6a1b2c3d-ffffffffffffffffffffffff", "id": "cccccccccccccccc", "name": "other"}),
	}
	if err := os.WriteFile(segs, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	v, err := viewer.New(viewer.Config{Auditor: a, Segments: viewer.FileSegments(segs)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(v)
	t.Cleanup(srv.Close)
	return &world{a: a, srv: srv, table: name, client: ddb.Client(ctx)}
}

func quote(s string) string       { b, _ := json.Marshal(s); return string(b) }
func doc(m map[string]any) string { b, _ := json.Marshal(m); return string(b) }
func sec(t time.Time) float64     { return float64(t.UnixMicro()) / 1e6 }

func (w *world) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(w.srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

var callRowRE = regexp.MustCompile(`data-call="([^"]+)"`)

func listed(body string) []string {
	var out []string
	for _, m := range callRowRE.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestCallsListAndFilters: newest first within the default day; every
// filter narrows the list (caller and entity through their indexes).
func TestCallsListAndFilters(t *testing.T) {
	w := newWorld(t)
	for path, want := range map[string]string{
		"/":                    "c-hostile c-ok",
		"/?since=72h":          "c-hostile c-ok c-old",
		"/?tool=broadcast_get": "c-ok",
		"/?outcome=error":      "c-hostile",
		"/?outcome=INTERNAL":   "c-hostile",
		"/?outcome=ok":         "c-ok",
		"/?caller=bob":         "c-hostile",
		"/?caller=jwt%23https://issuer.example%23%23alice": "c-ok",
		"/?entity=b-2": "c-hostile",
		"/?entity=entityId%3Db-1&tool=broadcast_get":                       "c-ok",
		"/?until=" + t0.Add(500*time.Millisecond).Format(time.RFC3339Nano): "c-ok",
		"/?limit=1": "c-hostile",
	} {
		code, body := w.get(t, path)
		if got := strings.Join(listed(body), " "); code != 200 || got != want {
			t.Errorf("%s: %d, listed %q, want %q", path, code, got, want)
		}
	}
	_, body := w.get(t, "/")
	for _, s := range []string{`data-tool="broadcast_get"`, `<svg class="hist"`, "100.0%", `href="/trace/` + traceID + `"`} {
		if !strings.Contains(body, s) {
			t.Errorf("calls page lacks %s", s)
		}
	}
}

// TestHostilePreviewIsText: a preview, raw error and unverified caller
// holding <script> come out escaped, and no page has a script element.
func TestHostilePreviewIsText(t *testing.T) {
	w := newWorld(t)
	code, body := w.get(t, "/call/broadcast_create/c-hostile")
	if code != 200 {
		t.Fatalf("call page: %d %s", code, body)
	}
	if strings.Contains(strings.ToLower(body), "<script") {
		t.Errorf("the call page has a script element:\n%s", body)
	}
	for _, s := range []string{`&#34;title&#34;: &#34;&lt;script&gt;document.title=\&#34;pwned\&#34;&lt;/script&gt;&#34;`, "UNVERIFIED", "mallory&lt;script&gt;", "boom &lt;script&gt;"} {
		if !strings.Contains(body, s) {
			t.Errorf("call page lacks %s:\n%s", s, body)
		}
	}
	for _, p := range []string{"/", "/trace/1-6a1b2c3d-fedcba9876543210fedcba98"} {
		if _, body := w.get(t, p); strings.Contains(strings.ToLower(body), "<script") {
			t.Errorf("%s has a script element", p)
		}
	}
}

// TestTraceJoinsSegments: the gateway's segment, its forward subsegment
// and the tool's row (joined with its subsegment) nest in that order.
func TestTraceJoinsSegments(t *testing.T) {
	w := newWorld(t)
	code, body := w.get(t, "/trace/"+traceID)
	if code != 200 {
		t.Fatalf("trace page: %d", code)
	}
	re := regexp.MustCompile(`data-depth="(\d)" data-name="([^"]+)" data-kind="([^"]+)"`)
	var got []string
	for _, m := range re.FindAllStringSubmatch(body, -1) {
		got = append(got, m[1]+":"+m[2]+":"+m[3])
	}
	want := "0:GatewayFunction:function segment|1:BroadcastGetFunction:forward (lambda:Invoke)|2:broadcast_get:tool call (row &#43; subsegment)"
	if strings.Join(got, "|") != want {
		t.Errorf("trace lines\n got %q\nwant %q", strings.Join(got, "|"), want)
	}
	if code, _ := w.get(t, "/trace/1-6a1b2c3d-000000000000000000000000"); code != 404 {
		t.Errorf("unknown trace: %d", code)
	}
	if code, _ := w.get(t, "/call/broadcast_get/nope"); code != 404 {
		t.Errorf("unknown call: %d", code)
	}
}

// TestReadOnlyAndHostCheck: only GET and HEAD, only loopback Host names,
// and a policy that forbids every script.
func TestReadOnlyAndHostCheck(t *testing.T) {
	w := newWorld(t)
	resp, err := http.Post(w.srv.URL+"/", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", resp.StatusCode)
	}
	for host, want := range map[string]int{"evil.example": 421, "evil.example:80": 421, "localhost:1234": 200, "[::1]:9": 200, "127.0.0.2": 200} {
		req, _ := http.NewRequest("GET", w.srv.URL+"/", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %d, want %d", host, resp.StatusCode, want)
		}
		if want == 200 && !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") {
			t.Errorf("CSP: %q", resp.Header.Get("Content-Security-Policy"))
		}
	}
}

// scanCounter counts the table reads a viewer starts: the Scans of a
// table's first segment (a listing reads the table in segments).
type scanCounter struct {
	audit.DynamoAPI
	scans atomic.Int32
}

func (c *scanCounter) Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	if aws.ToInt32(in.Segment) == 0 && in.ExclusiveStartKey == nil {
		c.scans.Add(1)
	}
	return c.DynamoAPI.(audit.ScanAPI).Scan(ctx, in, optFns...)
}

// TestCrossSiteRequestsAreRefused (issue 20, L3): a web page elsewhere can
// make the operator's browser send GETs to the viewer — an <img src>, a
// link, a form, a no-cors fetch — each one a Scan of the table with the
// operator's credentials. Such requests, as browsers mark them
// (Sec-Fetch-Site other than same-origin or none; without Fetch Metadata,
// an Origin that is not the viewer's), are refused before anything is
// read. The viewer's own pages, an address typed or bookmarked, and clients
// that are no browser are served.
func TestCrossSiteRequestsAreRefused(t *testing.T) {
	w := newWorld(t)
	counter := &scanCounter{DynamoAPI: w.client}
	v, err := viewer.New(viewer.Config{Auditor: audit.New(audit.Config{Table: w.table, Client: counter})})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(v)
	t.Cleanup(srv.Close)
	self := srv.URL // http://127.0.0.1:<port>
	get := func(header map[string]string) int {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+"/?since=72h", nil)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	refused := map[string]map[string]string{
		"<img src> on another site": {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "image"},
		"a link on another site":    {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document", "Sec-Fetch-User": "?1"},
		"a page on another port":    {"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "image"},
		"a value not yet known":     {"Sec-Fetch-Site": "same-planet"},
		"fetch, no Fetch Metadata":  {"Origin": "http://evil.example"},
		"another port's origin":     {"Origin": "http://127.0.0.1:1"},
		"an opaque origin":          {"Origin": "null"},
	}
	for name, h := range refused {
		if code := get(h); code != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", name, code)
		}
	}
	if n := counter.scans.Load(); n != 0 {
		t.Errorf("refused requests read the table %d times", n)
	}
	served := map[string]map[string]string{
		"the viewer's own link":   {"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "navigate"},
		"its own form":            {"Sec-Fetch-Site": "same-origin", "Origin": self},
		"an address typed":        {"Sec-Fetch-Site": "none", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-User": "?1"},
		"curl":                    {},
		"own origin, no metadata": {"Origin": self},
	}
	for name, h := range served {
		if code := get(h); code != http.StatusOK {
			t.Errorf("%s: %d, want 200", name, code)
		}
	}
	if n := counter.scans.Load(); n != int32(len(served)) {
		t.Errorf("the table read %d times for %d served listings", n, len(served))
	}
}

// TestACallsTwoRowsAreOneCall: a call the gateway gave up on (its row:
// TIMEOUT, may have run) and whose function finished after all is one line
// of the listing, counted once, the function's row its outcome, linking
// the gateway's; the call page names both rows and the outcome; the trace
// says which line is the outcome. A call whose function never answered is
// the gateway's row alone.
func TestACallsTwoRowsAreOneCall(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	const trace = "1-6a1b2c3d-0123456789abcdef0123aaaa"
	gw := func(call, code, outcome string, at time.Duration) *audit.Row {
		return &audit.Row{CallID: call, Writer: audit.GatewayWriter, Tool: "broadcast_digest", Stage: "gateway", ErrorCode: code, Outcome: outcome,
			SpanID: "ddddddddddddddd" + call[len(call)-1:], ParentSpanID: forwardID, TraceID: trace, StartedAt: t0.Add(at), DurationMs: 300,
			CallerSubject: "carol", CallerAuthMethod: "jwt", CallerIssuer: "https://issuer.example"}
	}
	w.a.Record(ctx, gw("c-late1", "TIMEOUT", audit.OutcomeUnknown, 3*time.Second))
	w.a.Record(ctx, &audit.Row{CallID: "c-late1", Writer: "broadcast_digest", Tool: "broadcast_digest", SpanID: "eeeeeeeeeeeeeee1", ParentSpanID: forwardID,
		TraceID: trace, StartedAt: t0.Add(3*time.Second + time.Millisecond), DurationMs: 900, OK: true,
		CallerSubject: "carol", CallerAuthMethod: "jwt", CallerIssuer: "https://issuer.example", Dimensions: map[string]string{"entityId": "ch-9"}})
	w.a.Record(ctx, gw("c-throttled2", "RATE_LIMITED", "", 4*time.Second))

	for path, want := range map[string]string{
		"/?caller=carol":            "c-throttled2:gateway c-late1:function",
		"/?entity=ch-9":             "c-late1:function",
		"/?outcome=ok&caller=carol": "c-late1:function",
		"/?outcome=TIMEOUT":         "",
	} {
		code, body := w.get(t, path)
		var got []string
		for _, m := range regexp.MustCompile(`data-call="([^"]+)"[^>]*data-outcome-row="([^"]+)"`).FindAllStringSubmatch(body, -1) {
			got = append(got, m[1]+":"+m[2])
		}
		if code != 200 || strings.Join(got, " ") != want {
			t.Errorf("%s: %d, listed %q, want %q", path, code, strings.Join(got, " "), want)
		}
		if strings.Contains(want, "c-late1") && !strings.Contains(body, `<a class="other" href="/call/gateway/c-late1"`) || strings.Contains(want, "c-late1") && !strings.Contains(body, `>+ gateway&#39;s row: TIMEOUT</a>`) {
			t.Errorf("%s: no link to the gateway's row:\n%s", path, body)
		}
	}
	// Two calls of broadcast_digest, not three rows.
	if _, body := w.get(t, "/?caller=carol"); !strings.Contains(body, `broadcast_digest</a></td><td class="num">2</td>`) {
		t.Errorf("stats: want 2 broadcast_digest calls:\n%s", body)
	}
	for path, want := range map[string][]string{
		"/call/gateway/c-late1":          {`id="call-rows"`, `<a href="/call/broadcast_digest/c-late1">function&#39;s row</a>: ok — the call's outcome`, `<strong>gateway&#39;s row</strong> (shown): TIMEOUT`},
		"/call/broadcast_digest/c-late1": {`<strong>function&#39;s row</strong> (shown): ok — the call's outcome`, `<a href="/call/gateway/c-late1">gateway&#39;s row</a>: TIMEOUT`},
		"/call/gateway/c-throttled2":     {`The gateway's row is this call's only row: its function never saw the call.`},
	} {
		code, body := w.get(t, path)
		for _, s := range want {
			if code != 200 || !strings.Contains(body, s) {
				t.Errorf("%s: %d, lacks %s:\n%s", path, code, s, body)
			}
		}
	}
	_, body := w.get(t, "/trace/"+trace)
	for _, s := range []string{
		`data-kind="gateway&#39;s row (the function did not answer it), not the outcome: the function&#39;s row is"`,
		`data-kind="tool call (row), the call&#39;s outcome"`,
		`data-kind="gateway&#39;s row (the function did not answer it)"`,
	} {
		if !strings.Contains(body, s) {
			t.Errorf("trace lacks %s:\n%s", s, body)
		}
	}
}
