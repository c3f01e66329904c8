package localtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/catalog"
	"github.com/mcpfn/mcpfn/internal/auditcli"
	"github.com/mcpfn/mcpfn/internal/samgen"
	"github.com/mcpfn/mcpfn/localtest"
	"github.com/mcpfn/mcpfn/localtest/internal/claim"
	"github.com/mcpfn/mcpfn/wire"
)

// The claim check through the stack (issue 22): results and arguments past
// Lambda's and DynamoDB's limits go through the payloads bucket — the S3
// stand-in behind its enforcing front, over TLS — and every row proves the
// bytes.

var claimFunction = catalog.FunctionID(claim.Name)

// claimLinkTTL is the stack's result-link lifetime (the default is 15
// minutes): short enough that a test moves the S3 front's clock past it
// within SigV4's 15 minutes of tolerated skew.
const claimLinkTTL = time.Minute

func claimFunctions() []localtest.FunctionSpec {
	return []localtest.FunctionSpec{{Name: claimFunction, Package: "./localtest/internal/claim/function", Tool: claim.Name, Timeout: 60}}
}

// claimCall calls the fixture through the gateway as a go-sdk client.
func claimCall(t *testing.T, cs *mcp.ClientSession, in claim.Input) *mcp.CallToolResult {
	t.Helper()
	b, _ := json.Marshal(in)
	var args map[string]any
	_ = json.Unmarshal(b, &args)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: claim.Name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", claim.Name, err)
	}
	return res
}

// report is the fixture's first block: what its handler received.
func report(t *testing.T, res *mcp.CallToolResult) claim.Report {
	t.Helper()
	if res.IsError || len(res.Content) == 0 {
		t.Fatalf("the call failed: %s", text(res))
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	var r claim.Report
	if !ok || json.Unmarshal([]byte(tc.Text), &r) != nil {
		t.Fatalf("first block %#v is not the fixture's report", res.Content[0])
	}
	return r
}

// claimRow is the function's final row of the call recorded under entity id.
func claimRow(t *testing.T, id string) audit.Row {
	t.Helper()
	rows, err := auditor().EntityRows(t.Context(), "entityId", id, audit.QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Writer == claim.Name || r.Writer == "" && r.Tool == claim.Name {
			return r
		}
	}
	t.Fatalf("no row of %s for entity %s: %+v", claim.Name, id, rows)
	return audit.Row{}
}

// storedObject reads a row's object as the operator: its bytes as stored.
func storedObject(t *testing.T, o *audit.Object) []byte {
	t.Helper()
	if o == nil {
		t.Fatal("the row names no stored object")
	}
	out, err := stack.S3().GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String(o.Bucket), Key: aws.String(o.Key), VersionId: aws.String(o.VersionID)})
	if err != nil {
		t.Fatalf("reading %s: %v", o.Key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkStoredResultRow: the row names the stored result, and its size and
// SHA-256 are the stored bytes'; the stored result's blob, if any, names
// the payload's.
func checkStoredResultRow(t *testing.T, row audit.Row, payloadSHA string) {
	t.Helper()
	if !row.OK || row.ResultObject == nil || row.ResultObject.VersionID == "" {
		t.Fatalf("row %+v: want a successful call whose result was stored, by version", row)
	}
	if !strings.HasPrefix(row.ResultObject.Key, claim.Name+"/results/"+row.CallID+"/") {
		t.Errorf("result key %s is not under the call's results", row.ResultObject.Key)
	}
	doc := storedObject(t, row.ResultObject)
	if row.ResultBytes != len(doc) || row.ResultSHA256 != claim.SHA256(doc) {
		t.Errorf("row says %d bytes, sha256 %s; the stored result is %d bytes, sha256 %s", row.ResultBytes, row.ResultSHA256, len(doc), claim.SHA256(doc))
	}
	if payloadSHA != "" && !bytes.Contains(doc, []byte(`"sha256":"`+payloadSHA+`"`)) {
		t.Errorf("the stored result %.300s does not name the payload's SHA-256 %s", doc, payloadSHA)
	}
	if row.ArgsSHA256 == "" || row.ArgsBytes == 0 {
		t.Errorf("row %+v: no argument size and SHA-256", row)
	}
}

// TestClaimCheckResultPast6MBReachesAGoSDKClientInline: a 7 MB blob and a
// 7 MB text — each past Lambda's 6 MB answer, under the gateway's 12 MiB
// inline ceiling — reach a go-sdk client inline, byte for byte; the blob
// was stored as an object of its own beside the stored result, and each
// row carries the stored result's key, version, size and SHA-256.
func TestClaimCheckResultPast6MBReachesAGoSDKClientInline(t *testing.T) {
	cs := connect(t, unique("claim-inline"))
	const size = 7_000_000
	for _, kind := range []string{"blob", "text"} {
		t.Run(kind, func(t *testing.T) {
			id, seed := unique("inline-"+kind), t.Name()
			want := claim.Payload(seed, kind, size)
			res := claimCall(t, cs, claim.Input{Size: size, Kind: kind, Seed: seed, ID: id})
			report(t, res)
			if len(res.Content) != 2 {
				t.Fatalf("%d blocks, want the report and the payload", len(res.Content))
			}
			var got []byte
			switch c := res.Content[1].(type) {
			case *mcp.EmbeddedResource:
				if c.Resource == nil || c.Resource.URI != claim.URI || c.Resource.MIMEType != "application/octet-stream" {
					t.Fatalf("embedded resource %+v", c.Resource)
				}
				got = c.Resource.Blob
			case *mcp.TextContent:
				got = []byte(c.Text)
			default:
				t.Fatalf("payload block %T, want it inline", c)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("the payload arrived as %d bytes (sha256 %s), want %d (sha256 %s)", len(got), claim.SHA256(got), len(want), claim.SHA256(want))
			}
			row := claimRow(t, id)
			payloadSHA := ""
			if kind == "blob" {
				payloadSHA = claim.SHA256(want)
			}
			checkStoredResultRow(t, row, payloadSHA)
		})
	}
}

// TestClaimCheckResultAboveTheCeilingIsAResourceLink: a 14 MB blob (18.7
// MB as base64, above the 12 MiB ceiling) arrives as a resource_link whose
// URL serves exactly its bytes with its media type; the URL is refused once
// tampered with, or once it expired (the S3 front's clock moved past the
// link's life); a block that asked to be a link is one at any size.
func TestClaimCheckResultAboveTheCeilingIsAResourceLink(t *testing.T) {
	cs := connect(t, unique("claim-link"))
	id, seed := unique("link"), t.Name()
	const size = 14_000_000
	want := claim.Payload(seed, "blob", size)
	res := claimCall(t, cs, claim.Input{Size: size, Kind: "blob", Seed: seed, ID: id})
	report(t, res)
	link := resourceLink(t, res)
	if link.MIMEType != "application/octet-stream" || link.Size == nil || *link.Size != size || link.Name != "payload.bin" {
		t.Errorf("resource_link %+v: want payload.bin, application/octet-stream, %d bytes", link, size)
	}
	if link.Meta["io.mcpfn/resourceUri"] != claim.URI {
		t.Errorf("resource_link _meta %v does not name the resource %s", link.Meta, claim.URI)
	}
	status, got, header := fetchLink(t, link.URI)
	if status != http.StatusOK || !bytes.Equal(got, want) {
		t.Fatalf("the link served %d: %d bytes (sha256 %s), want %d (sha256 %s)", status, len(got), claim.SHA256(got), size, claim.SHA256(want))
	}
	if ct := header.Get("Content-Type"); ct != "application/octet-stream" {
		t.Errorf("the link served Content-Type %q", ct)
	}
	row := claimRow(t, id)
	checkStoredResultRow(t, row, claim.SHA256(want))
	// `mcpfn audit verify` holds the stored result and its blob against
	// the row, as an operator would with the AWS configuration.
	for k, v := range map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": stack.DynamoDBEndpoint(), "AWS_ENDPOINT_URL_S3": stack.S3URL(),
		"AWS_CA_BUNDLE": stack.S3CAFile(), localtest.EnvS3UsePathStyle: "true", "AWS_REGION": "us-east-1",
		"AWS_ACCESS_KEY_ID": localtest.OperatorKeyID, "AWS_SECRET_ACCESS_KEY": localtest.OperatorSecret,
		"AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"} {
		t.Setenv(k, v)
	}
	var out bytes.Buffer
	if code := auditcli.Run(t.Context(), []string{"-table", stack.AuditTable(), "verify", "-tool", claim.Name, row.CallID}, nil, &out, &out); code != 0 ||
		strings.Count(out.String(), ": OK") != 2 { // the result and its blob
		t.Errorf("mcpfn audit verify: exit %d:\n%s", code, out.String())
	}

	// Tampered: another version, or another key, under the same signature.
	u, _ := url.Parse(link.URI)
	for name, change := range map[string]func(url.Values){
		"versionId": func(q url.Values) { q.Set("versionId", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA") },
		"expires":   func(q url.Values) { q.Set("X-Amz-Expires", "604800") },
	} {
		q := u.Query()
		change(q)
		tampered := *u
		tampered.RawQuery = q.Encode()
		if status, body, _ := fetchLink(t, tampered.String()); status != http.StatusForbidden {
			t.Errorf("tampered %s: %d %.200s, want 403", name, status, body)
		}
	}
	other := strings.Replace(link.URI, "/"+claim.Name+"/results/", "/"+claim.Name+"/args/", 1)
	if status, body, _ := fetchLink(t, other); status != http.StatusForbidden {
		t.Errorf("another key under the signature: %d %.200s, want 403", status, body)
	}
	// Expired: past the link's life by the front's clock.
	restore := stack.AdvanceIAMClock(claimLinkTTL + time.Minute)
	status, body, _ := fetchLink(t, link.URI)
	restore()
	if status != http.StatusForbidden || !strings.Contains(string(body), "Request has expired") {
		t.Errorf("expired link: %d %.200s, want 403 Request has expired", status, body)
	}

	// A small block that asked to be a link.
	small := claim.Payload(seed, "image", 1000)
	res = claimCall(t, cs, claim.Input{Size: 1000, Kind: "image", Seed: seed, Link: true, ID: unique("asked")})
	link = resourceLink(t, res)
	if status, got, _ := fetchLink(t, link.URI); status != http.StatusOK || !bytes.Equal(got, small) || link.MIMEType != "image/png" {
		t.Errorf("the asked-for link (%s) served %d, %d bytes", link.MIMEType, status, len(got))
	}
}

// resourceLink is a result's payload block, which must be a resource_link.
func resourceLink(t *testing.T, res *mcp.CallToolResult) *mcp.ResourceLink {
	t.Helper()
	if len(res.Content) != 2 {
		t.Fatalf("%d blocks, want the report and the payload", len(res.Content))
	}
	link, ok := res.Content[1].(*mcp.ResourceLink)
	if !ok {
		t.Fatalf("payload block %T, want a resource_link", res.Content[1])
	}
	return link
}

// fetchLink GETs a presigned URL as a client of the stack would (trusting
// the stack's CA).
func fetchLink(t *testing.T, u string) (int, []byte, http.Header) {
	t.Helper()
	resp, err := stack.S3HTTPClient().Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header
}

// TestClaimCheckTaskWith2MBResultIsReadWithTasksGet: a task whose result
// (2 MB, far past a task record's 350 KB) the run stored completes, and
// tasks/get answers the result inline, byte for byte, from the payloads
// bucket; the run's row names the stored result.
func TestClaimCheckTaskWith2MBResultIsReadWithTasksGet(t *testing.T) {
	c := claimTaskConn(t, unique("claim-task"))
	id, seed := unique("task-result"), t.Name()
	const size = 2_000_000
	task := claimTask(t, c, claim.Input{Size: size, Kind: "blob", Seed: seed, ID: id})
	res := taskResult(t, task)
	er, ok := res.Content[1].(*mcp.EmbeddedResource)
	if !ok || !bytes.Equal(er.Resource.Blob, claim.Payload(seed, "blob", size)) {
		t.Fatalf("the task's payload block %T is not the 2 MB blob", res.Content[1])
	}
	row := claimRow(t, id)
	if row.TaskID == "" {
		t.Errorf("row %+v: no task id", row)
	}
	checkStoredResultRow(t, row, claim.SHA256(claim.Payload(seed, "blob", size)))

	// Expired (the bucket's lifecycle, which the stand-in does not run:
	// the version is deleted) before the next tasks/get: a clear error,
	// never an empty result.
	if _, err := stack.S3().DeleteObject(t.Context(), &s3.DeleteObjectInput{Bucket: aws.String(row.ResultObject.Bucket),
		Key: aws.String(row.ResultObject.Key), VersionId: aws.String(row.ResultObject.VersionID)}); err != nil {
		t.Fatal(err)
	}
	e := c.callError(t, "tasks/get", map[string]any{"taskId": task["taskId"]})
	if e.Code != -32603 || !strings.Contains(e.Message, "expired or was deleted") {
		t.Errorf("tasks/get of an expired result: %+v", e)
	}
}

// callError sends a request that must fail and returns its JSON-RPC error.
func (c *sdkConn) callError(t *testing.T, method string, params map[string]any) *jsonrpc.Error {
	t.Helper()
	c.id++
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "mcpfn-claim", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{tasksExtension: map[string]any{}}},
	}
	raw, _ := json.Marshal(params)
	id, _ := jsonrpc.MakeID(float64(c.id))
	if err := c.conn.Write(t.Context(), &jsonrpc.Request{ID: id, Method: method, Params: raw}); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	for {
		msg, err := c.conn.Read(t.Context())
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		if resp, ok := msg.(*jsonrpc.Response); ok && resp.ID == id {
			var e *jsonrpc.Error
			if resp.Error == nil || !errors.As(resp.Error, &e) {
				t.Fatalf("%s answered %s, want an error", method, resp.Result)
			}
			return e
		}
	}
}

// TestClaimCheckLargeArgumentsReachTheHandler: an argument just under the
// gateway's request limit for a tool that declared it (its envelope past
// what the gateway sends in one Invoke) to a synchronous call, and a 2 MB
// argument to a task (past the task record's 350 KB), reach the handler
// byte for byte through the payloads bucket; each row names the stored
// arguments with their canonical size and SHA-256.
func TestClaimCheckLargeArgumentsReachTheHandler(t *testing.T) {
	t.Run("synchronous", func(t *testing.T) {
		cs := connect(t, unique("claim-args"))
		id := unique("args-sync")
		data := string(claim.Payload(t.Name(), "text", adapter.MaxArgumentBytesLimit-64))
		r := report(t, claimCall(t, cs, claim.Input{Data: data, ID: id}))
		if r.DataBytes != len(data) || r.DataSHA256 != claim.SHA256([]byte(data)) {
			t.Fatalf("the handler got %d bytes (sha256 %s), want %d (sha256 %s)", r.DataBytes, r.DataSHA256, len(data), claim.SHA256([]byte(data)))
		}
		checkStoredArgsRow(t, claimRow(t, id), data)
	})
	t.Run("task", func(t *testing.T) {
		c := claimTaskConn(t, unique("claim-task-args"))
		id := unique("args-task")
		data := string(claim.Payload(t.Name(), "text", 2_000_000))
		res := taskResult(t, claimTask(t, c, claim.Input{Data: data, ID: id}))
		var r claim.Report
		if tc, ok := res.Content[0].(*mcp.TextContent); !ok || json.Unmarshal([]byte(tc.Text), &r) != nil || r.DataSHA256 != claim.SHA256([]byte(data)) {
			t.Fatalf("the task's handler reported %+v, want %d bytes, sha256 %s", r, len(data), claim.SHA256([]byte(data)))
		}
		checkStoredArgsRow(t, claimRow(t, id), data)
	})
}

// checkStoredArgsRow: the row names the stored arguments, whose bytes are
// the canonical arguments {"data":…} (and {"id":…}), their size and SHA-256
// the row's.
func checkStoredArgsRow(t *testing.T, row audit.Row, data string) {
	t.Helper()
	if row.ArgsObject == nil || !strings.HasPrefix(row.ArgsObject.Key, claim.Name+"/args/") {
		t.Fatalf("row %+v: no stored arguments", row)
	}
	stored := storedObject(t, row.ArgsObject)
	if int64(len(stored)) != row.ArgsBytes || claim.SHA256(stored) != row.ArgsSHA256 || !bytes.HasPrefix(stored, []byte(`{"data":"`+data[:64])) {
		t.Errorf("stored arguments: %d bytes (sha256 %s), row %d bytes (sha256 %s)", len(stored), claim.SHA256(stored), row.ArgsBytes, row.ArgsSHA256)
	}
}

// TestClaimCheckATamperedStoredArgumentIsRefused: an envelope whose call
// token was issued for one argument, its reference pointing at another
// object (the gateway's role wrote both) — whether the reference names the
// other object's SHA-256 or the original's — is refused
// token_wrong_arguments, and the handler never runs.
func TestClaimCheckATamperedStoredArgumentIsRefused(t *testing.T) {
	keys, err := localtest.LoadKeys(stackDir(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	gw := stack.S3As(stack.GatewayCredentials())
	bucket := stack.Bucket(samgen.PayloadsBucket)
	callID := unique("tampered")
	key := wire.ArgsKey(claim.Name, callID)
	put := func(args string) wire.ObjectRef {
		out, err := gw.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader(args)})
		if err != nil {
			t.Fatal(err)
		}
		return wire.ObjectRef{Bucket: bucket, Key: key, VersionID: aws.ToString(out.VersionId), Size: int64(len(args)), SHA256: claim.SHA256([]byte(args))}
	}
	original, swapped := `{"data":"original","id":"`+callID+`"}`, `{"data":"swapped!","id":"`+callID+`"}`
	orig, swap := put(original), put(swapped)
	// The token the gateway issued for the original arguments.
	signed, err := keys.SignEnvelope(mustJSON(wire.Envelope{Version: "1", CallID: callID, Params: wire.EnvelopeParams{Name: claim.Name, Arguments: json.RawMessage(original)}}), nil, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	lying := swap
	lying.SHA256, lying.Size = orig.SHA256, orig.Size
	for name, ref := range map[string]wire.ObjectRef{"the swapped object's own SHA-256": swap, "the original's SHA-256": lying} {
		var env wire.Envelope
		_ = json.Unmarshal(signed, &env)
		env.Params.Arguments, env.Params.ArgumentsRef = nil, &ref
		a := invokeHTTP(t, claimFunction, mustJSON(env), nil)
		if a.Tool != "UNAUTHORIZED" || a.Reason != "token_wrong_arguments" {
			t.Errorf("%s: %+v (%s), want UNAUTHORIZED token_wrong_arguments", name, a, a.raw)
		}
	}
	// The original, by its own reference, is what the token vouches for.
	var env wire.Envelope
	_ = json.Unmarshal(signed, &env)
	env.Params.Arguments, env.Params.ArgumentsRef = nil, &orig
	if a := invokeHTTP(t, claimFunction, mustJSON(env), nil); a.Tool != "" || !strings.Contains(string(a.raw), `\"dataSha256\":\"`+claim.SHA256([]byte("original"))) {
		t.Errorf("the untampered reference: %+v %s", a, a.raw)
	}
}

// TestClaimCheckS3StoppedMidCall: S3 unreachable when the function stores
// a result (the handler held until the outage began) — the call fails
// UNAVAILABLE, retryable, naming the payloads bucket, and its row says
// why and names no stored result; S3 unreachable when the gateway stores
// arguments — the call fails the same way before any function runs, and
// the gateway's row says so.
func TestClaimCheckS3StoppedMidCall(t *testing.T) {
	subject := unique("claim-outage")
	cs := connect(t, subject)
	t.Run("storing the result", func(t *testing.T) {
		hold := newClaimHold(t)
		id := unique("outage-result")
		done := make(chan *mcp.CallToolResult, 1)
		go func() {
			res, err := cs.CallTool(context.WithoutCancel(t.Context()), &mcp.CallToolParams{Name: claim.Name,
				Arguments: map[string]any{"size": 7_000_000, "kind": "blob", "seed": "outage", "hold": hold.URL, "id": id}})
			if err != nil {
				res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
			}
			done <- res
		}()
		<-hold.arrived // the handler is running
		end := stack.S3Outage(samgen.PayloadsBucket, claim.Name+"/results/")
		defer end()
		close(hold.release)
		res := <-done
		end()
		e := claimError(t, res)
		if e.Error != "UNAVAILABLE" || !e.Retryable || !strings.Contains(e.Message, "payloads bucket (S3)") {
			t.Fatalf("error %+v", e)
		}
		row := claimRow(t, id)
		if row.OK || row.ErrorCode != "UNAVAILABLE" || !strings.Contains(row.RawError, "S3 unavailable: PutObject "+claim.Name+"/results/") || row.ResultObject != nil {
			t.Errorf("row %+v", row)
		}
	})
	t.Run("storing the arguments", func(t *testing.T) {
		end := stack.S3Outage(samgen.PayloadsBucket, claim.Name+"/args/")
		res := claimCall(t, cs, claim.Input{Data: strings.Repeat("a", 6<<20-256<<10)})
		end()
		e := claimError(t, res)
		if e.Error != "UNAVAILABLE" || !e.Retryable || !strings.Contains(e.Message, "payloads bucket (S3)") || e.Details.CallID == "" {
			t.Fatalf("error %+v", e)
		}
		rows := rowsOfCall(t, subject, e.Details.CallID)
		if len(rows) != 1 || rows[0].Writer != audit.GatewayWriter || rows[0].ErrorCode != "UNAVAILABLE" ||
			!strings.Contains(rows[0].RawError, "S3 unavailable: PutObject "+claim.Name+"/args/") || rows[0].ArgsSHA256 == "" {
			t.Errorf("rows %+v", rows)
		}
	})
}

// claimErrorBody is an isError result's body.
type claimErrorBody struct {
	Error     string `json:"error"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
	Details   struct {
		CallID string `json:"callId"`
	} `json:"details"`
}

func claimError(t *testing.T, res *mcp.CallToolResult) claimErrorBody {
	t.Helper()
	var e claimErrorBody
	if !res.IsError || json.Unmarshal([]byte(text(res)), &e) != nil {
		t.Fatalf("want an error result, got %s", text(res))
	}
	return e
}

// claimHold is a URL the fixture's handler fetches before it answers:
// arrived says it is there, closing release lets it go on.
type claimHold struct {
	URL              string
	arrived, release chan struct{}
}

func newClaimHold(t *testing.T) *claimHold {
	h := &claimHold{arrived: make(chan struct{}), release: make(chan struct{})}
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(h.arrived) })
		select {
		case <-h.release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		select {
		case <-h.release:
		default:
			close(h.release)
		}
	})
	h.URL = srv.URL
	return h
}

// claimTaskConn is a go-sdk transport connection for task calls (see
// tasks_gosdk_test.go).
func claimTaskConn(t *testing.T, subject string) *sdkConn {
	t.Helper()
	token, err := stack.MintToken(map[string]any{"sub": subject, "scope": demoScope})
	if err != nil {
		t.Fatal(err)
	}
	tr := &mcp.StreamableClientTransport{Endpoint: stack.MCPURL(), HTTPClient: &http.Client{Transport: taskNameHeader{bearer{token}}, Timeout: time.Minute}}
	conn, err := tr.Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &sdkConn{conn: conn}
}

// claimTask runs the fixture as a task and polls tasks/get (at the
// interval the gateway asks for) until it has ended.
func claimTask(t *testing.T, c *sdkConn, in claim.Input) map[string]any {
	t.Helper()
	b, _ := json.Marshal(in)
	var args map[string]any
	_ = json.Unmarshal(b, &args)
	created := c.call(t, "tools/call", map[string]any{"name": claim.Name, "arguments": args})
	id, _ := created["taskId"].(string)
	if created["resultType"] != "task" || id == "" {
		t.Fatalf("tools/call with the tasks extension answered %.300v, want a CreateTaskResult", created)
	}
	for giveUp := time.Now().Add(time.Minute); ; { // a safety net, not a timing assertion
		task := c.call(t, "tasks/get", map[string]any{"taskId": id})
		if task["status"] != "working" {
			return task
		}
		if time.Now().After(giveUp) {
			t.Fatalf("task %s still working", id)
		}
		time.Sleep(pollInterval(task))
	}
}

// taskResult is a completed task's result, as a go-sdk CallToolResult.
func taskResult(t *testing.T, task map[string]any) *mcp.CallToolResult {
	t.Helper()
	if task["status"] != "completed" {
		t.Fatalf("task %.500v, want completed", task)
	}
	b, _ := json.Marshal(task["result"])
	var res mcp.CallToolResult
	if err := json.Unmarshal(b, &res); err != nil || res.IsError || len(res.Content) == 0 {
		t.Fatalf("the task's result %.300s: %v", b, err)
	}
	return &res
}
