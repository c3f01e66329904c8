package auditcli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/internal/dynamolocal"
)

func TestMain(m *testing.M) { dynamolocal.Main(m) }

// table creates an audit table in DynamoDB Local, records rows in it and
// points the default AWS configuration at it, as the README's tour does with
// AWS_ENDPOINT_URL_DYNAMODB, so run reaches it the way main does.
func table(t *testing.T, rows ...audit.Row) string {
	t.Helper()
	ddb, name := dynamolocal.TemplateTableForTest(t, "AuditTable", "cli")
	ctx := context.Background()
	a := audit.New(audit.Config{Table: name, Client: ddb.Client(ctx)})
	for i := range rows {
		a.Record(ctx, &rows[i])
	}
	for k, v := range map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": ddb.Endpoint(), "AWS_REGION": "us-east-1",
		"AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local", "AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"} {
		t.Setenv(k, v)
	}
	return name
}

func row(call, span, parent string, at time.Duration) audit.Row {
	return audit.Row{CallID: call, Tool: "broadcast_get", SpanID: span, ParentSpanID: parent, TraceID: "1-5f84c7a1-aaaaaaaaaaaaaaaaaaaaaaaa",
		StartedAt: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC).Add(at), DurationMs: 5, OK: true, Status: audit.StatusDone,
		CallerSubject: "user-1", CallerAuthMethod: "jwt", CallerIssuer: "https://issuer.example", Tenant: "acme",
		Dimensions: map[string]string{"entityId": "b-" + call}}
}

// TestRun: every subcommand through run, against a table in DynamoDB Local.
func TestRun(t *testing.T) {
	name := table(t, row("c-root", "1111111111111111", "00000000000000aa", 0), row("c-child", "2222222222222222", "1111111111111111", time.Millisecond))
	cli := func(stdin string, args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := Run(context.Background(), append([]string{"-table", name}, args...), strings.NewReader(stdin), &out, &errb)
		return out.String(), errb.String(), code
	}
	const wantTree = `trace 1-5f84c7a1-aaaaaaaaaaaaaaaaaaaaaaaa (2 rows)
└─ 2026-11-29T12:00:00.000Z broadcast_get ok 5.0ms span=1111111111111111 call=c-root parent=00000000000000aa caller=jwt#https://issuer.example#acme#user-1 entityId=b-c-root
   └─ 2026-11-29T12:00:00.001Z broadcast_get ok 5.0ms span=2222222222222222 call=c-child parent=1111111111111111 caller=jwt#https://issuer.example#acme#user-1 entityId=b-c-child
`
	if out, stderr, code := cli("", "trace", "1-5f84c7a1-aaaaaaaaaaaaaaaaaaaaaaaa"); code != 0 || out != wantTree {
		t.Errorf("trace: code %d, stderr %s, got:\n%s", code, stderr, out)
	}
	if out, _, code := cli("", "entity", "entityId", "b-c-child"); code != 0 || !strings.Contains(out, "call=c-child") || strings.Count(out, "\n") != 1 {
		t.Errorf("entity: code %d:\n%s", code, out)
	}
	if out, _, code := cli("", "-json", "-auth", "jwt", "-issuer", "https://issuer.example", "-tenant", "acme", "caller", "user-1"); code != 0 ||
		!strings.Contains(out, `"callId":"c-child"`) || strings.Count(out, "\n") != 2 {
		t.Errorf("caller: code %d:\n%s", code, out)
	}
	// Another issuer's user-1 is someone else.
	if out, _, code := cli("", "-issuer", "https://other.example", "-tenant", "acme", "caller", "user-1"); code != 0 || out != "" {
		t.Errorf("caller of another issuer: code %d:\n%s", code, out)
	}
	// A listing names the caller by key; callerkey takes it back.
	key := "jwt#https://issuer.example#acme#user-1"
	if out, _, code := cli("", "-limit", "1", "callerkey", key); code != 0 || !strings.Contains(out, "call=c-child") || !strings.Contains(out, " caller="+key+" ") {
		t.Errorf("callerkey: code %d:\n%s", code, out)
	}

	// A row that an unreachable table sent to the fallback log, replayed.
	var fb bytes.Buffer
	unreachable := roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, errors.New("connection refused") })
	down := audit.New(audit.Config{Table: name, Fallback: &fb, MaxAttempts: 1, Client: dynamodb.NewFromConfig(aws.Config{
		Region: "us-east-1", HTTPClient: &http.Client{Transport: unreachable}, Credentials: credentials.NewStaticCredentialsProvider("x", "x", "")})})
	replayed := row("c-replayed", "3333333333333333", "1111111111111111", 2*time.Millisecond)
	down.Record(context.Background(), &replayed)
	if out, stderr, code := cli("2026-11-29T12:00:00.000Z\t7c1d\tINFO\t"+fb.String(), "replay", "-writer", "broadcast_get", "-"); code != 0 || !strings.Contains(out, "found=1 written=1") {
		t.Errorf("replay: code %d, stderr %s:\n%s", code, stderr, out)
	}
	if out, _, code := cli("", "entity", "entityId", "b-c-replayed"); code != 0 || !strings.Contains(out, "call=c-replayed") {
		t.Errorf("the replayed row is not in the table: code %d:\n%s", code, out)
	}

	if _, stderr, code := cli("", "bogus"); code != 2 || !strings.Contains(stderr, "serve [-addr A]") {
		t.Errorf("bogus command: code %d, usage:\n%s", code, stderr)
	}
	var errb bytes.Buffer
	if code := Run(context.Background(), []string{"trace", "x"}, nil, io.Discard, &errb); code != 2 || !strings.Contains(errb.String(), "no table") {
		t.Errorf("no table: code %d, %s", code, errb.String())
	}
}

// TestReplayTakesTheWriterFromTheOperator (issue 20, M1): the log of a
// compromised broadcast_get function carries a broadcast_delete row naming
// another caller beside its own row. `replay` without -writer writes
// nothing and names the flag; with -writer broadcast_get it writes the
// function's own row only, and reports the other (exit 1, foreign=1).
func TestReplayTakesTheWriterFromTheOperator(t *testing.T) {
	name := table(t)
	var log bytes.Buffer
	unreachable := roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, errors.New("connection refused") })
	down := audit.New(audit.Config{Table: name, Fallback: &log, MaxAttempts: 1, Client: dynamodb.NewFromConfig(aws.Config{
		Region: "us-east-1", HTTPClient: &http.Client{Transport: unreachable}, Credentials: credentials.NewStaticCredentialsProvider("x", "x", "")})})
	own := row("c-own", "1111111111111111", "", 0)
	down.Record(context.Background(), &own)
	forged := row("c-forged", "2222222222222222", "", time.Millisecond)
	forged.Writer, forged.Tool, forged.CallerSubject = "broadcast_delete", "broadcast_delete", "victim"
	down.Record(context.Background(), &forged)
	cli := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := Run(context.Background(), append([]string{"-table", name}, args...), strings.NewReader(log.String()), &out, &errb)
		return out.String(), errb.String(), code
	}
	listed := func(call string) bool {
		out, _, code := cli("entity", "entityId", "b-"+call)
		return code != 0 || strings.Contains(out, "call="+call)
	}

	if out, stderr, code := cli("replay", "-"); code != 2 || out != "" || !strings.Contains(stderr, "-writer <tool>") || !strings.Contains(stderr, "-writer gateway") {
		t.Errorf("replay without -writer: code %d, stdout %q, stderr:\n%s", code, out, stderr)
	}
	if listed("c-own") || listed("c-forged") {
		t.Fatal("replay without -writer wrote rows")
	}

	out, stderr, code := cli("replay", "-writer", "broadcast_get", "-")
	if code != 1 || !strings.Contains(out, "found=2 written=1 ") || !strings.Contains(out, " foreign=1") ||
		!strings.Contains(stderr, `writer "broadcast_delete" in the log of broadcast_get`) {
		t.Errorf("replay -writer broadcast_get: code %d, stdout %q, stderr:\n%s", code, out, stderr)
	}
	if !listed("c-own") || listed("c-forged") {
		t.Errorf("after the replay: own row listed %v, forged row listed %v; want only the own row", listed("c-own"), listed("c-forged"))
	}
}

// TestRunJoinsACallsRows: a call the gateway gave up on (its row: TIMEOUT,
// the function may have run) and whose function finished after all (its
// row: ok) is one call in every listing, the function's row its outcome;
// the entity listing, which holds only the function's row, reads the
// gateway's by key.
func TestRunJoinsACallsRows(t *testing.T) {
	fn := row("c-late", "2222222222222222", "1111111111111111", time.Millisecond)
	fn.Writer = "broadcast_get"
	gw := row("c-late", "3333333333333333", "1111111111111111", 0)
	gw.Writer, gw.Stage, gw.OK, gw.ErrorCode, gw.Outcome, gw.Dimensions = audit.GatewayWriter, "gateway", false, "TIMEOUT", audit.OutcomeUnknown, nil
	unseen := row("c-unseen", "4444444444444444", "1111111111111111", 2*time.Millisecond)
	unseen.Writer, unseen.Stage, unseen.OK, unseen.ErrorCode, unseen.Dimensions = audit.GatewayWriter, "gateway", false, "RATE_LIMITED", nil
	name := table(t, gw, fn, unseen)
	cli := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := Run(context.Background(), append([]string{"-table", name}, args...), nil, &out, &errb); code != 0 {
			t.Fatalf("%v: code %d: %s", args, code, errb.String())
		}
		return out.String()
	}
	const caller = " caller=jwt#https://issuer.example#acme#user-1"
	wantTree := `trace 1-5f84c7a1-aaaaaaaaaaaaaaaaaaaaaaaa (3 rows)
├─ 2026-11-29T12:00:00.001Z broadcast_get ok 5.0ms span=2222222222222222 call=c-late parent=1111111111111111` + caller + ` entityId=b-c-late outcome-row=function gateway-row=TIMEOUT
└─ 2026-11-29T12:00:00.002Z broadcast_get error RATE_LIMITED 5.0ms span=4444444444444444 call=c-unseen parent=1111111111111111` + caller + ` outcome-row=gateway
`
	if out := cli("trace", "1-5f84c7a1-aaaaaaaaaaaaaaaaaaaaaaaa"); out != wantTree {
		t.Errorf("trace:\n%s\nwant:\n%s", out, wantTree)
	}
	if out := cli("entity", "entityId", "b-c-late"); strings.Count(out, "\n") != 1 || !strings.Contains(out, "call=c-late") || !strings.Contains(out, "outcome-row=function gateway-row=TIMEOUT") {
		t.Errorf("entity:\n%s", out)
	}
	if out := cli("-issuer", "https://issuer.example", "-tenant", "acme", "caller", "user-1"); strings.Count(out, "\n") != 2 {
		t.Errorf("caller: want two calls:\n%s", out)
	}
	out := cli("-json", "entity", "entityId", "b-c-late")
	var c audit.Call
	if err := json.Unmarshal([]byte(out), &c); err != nil || c.CallID != "c-late" || c.OutcomeBy != audit.OutcomeByFunction ||
		c.Function == nil || !c.Function.OK || c.Gateway == nil || c.Gateway.ErrorCode != "TIMEOUT" {
		t.Errorf("-json entity: %v\n%s", err, out)
	}
}

// TestServe: `mcpfn-audit -table T serve -addr 127.0.0.1:0` prints its URL
// and serves the table until the context ends.
func TestServe(t *testing.T) {
	name := table(t, row("c-served", "1111111111111111", "00000000000000aa", 0))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		var errb strings.Builder
		done <- Run(ctx, []string{"-table", name, "serve", "-addr", "127.0.0.1:0", "-no-xray"}, nil, pw, &errb)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "VIEWER url=http://127.0.0.1:") {
		t.Fatalf("first line %q, %v", line, err)
	}
	url := strings.TrimSpace(strings.TrimPrefix(line, "VIEWER url="))
	resp, err := http.Get(url + "?since=1000000h")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "c-served") {
		t.Errorf("served %d:\n%s", resp.StatusCode, b)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("serve exited %d", code)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
