package localtest_test

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/golang-jwt/jwt/v5"

	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/calltoken"
	"github.com/mcpfn/mcpfn/localtest"
)

// The adversarial suite (issue 10; docs/security.md "The adversarial
// suite"): every class of bad input through the real paths of the running
// stack — the gateway over HTTP, the Invoke API straight to a tool
// function, the AgentCore-shaped front — and, for each, the documented
// answer, no 5xx, no crashed function, an audit row wherever a tool
// function was reached, nothing secret in any attribute of those rows, and
// a stack that still serves at the end.

// advAnswer is what a front answered, reduced to what the docs promise.
type advAnswer struct {
	Status int    // HTTP status (gateway, AgentCore front, Invoke API)
	Lambda string // Invoke API error type (X-Amzn-ErrorType) when it refused
	RPC    int64  // JSON-RPC error code of the answer
	Tool   string // tool error code of an isError result
	Reason string // details.reason of an UNAUTHORIZED tool error
	// Batch holds one answer per element of a batch answer.
	Batch []advAnswer
	// FunctionError is X-Amz-Function-Error (a crashed function).
	FunctionError string
	raw           []byte
}

func (a advAnswer) String() string {
	s := fmt.Sprintf("HTTP %d", a.Status)
	if a.Lambda != "" {
		s += " " + a.Lambda
	}
	if a.RPC != 0 {
		s += fmt.Sprintf(" rpc %d", a.RPC)
	}
	if a.Tool != "" {
		s += " tool " + a.Tool
	}
	if a.Reason != "" {
		s += " (" + a.Reason + ")"
	}
	if a.FunctionError != "" {
		s += " function error " + a.FunctionError
	}
	for _, b := range a.Batch {
		s += " [" + b.String() + "]"
	}
	return s
}

// advRow is an audit row with its raw item, scanned for secrets.
type advRow struct {
	audit.Row
	item map[string]types.AttributeValue
}

// advCase is one class of bad input.
type advCase struct {
	class string
	// run sends the input; it returns the answer and the secrets the input
	// carried (besides the suite's planted ones).
	run  func(t *testing.T, s *advSuite) (advAnswer, []string)
	want advAnswer
	// rowCode is the error code every row the case leaves must carry
	// ("ok" for successful calls); "" when the case reaches no function.
	rowCode string
	// gatewayRow: the gateway, not a function, writes the case's row.
	gatewayRow bool
	// replay: the case invokes a function twice for one call id, which
	// has one row.
	replay bool
	// check runs further assertions on the answer and the rows.
	check func(t *testing.T, s *advSuite, got advAnswer, rows []advRow)
}

type advSuite struct {
	keys    *localtest.LocalKeys
	secret  string // a secret-shaped value planted in inputs
	jwt     string // a JWT planted in inputs (a real, valid bearer token)
	subject string // the current case's caller
	token   string // the current case's bearer token (scope broadcasts:write)
}

// A secret that audit.IsSecretValue recognises, and its distinctive part,
// which must appear in no attribute of any row.
func newSecret() string { return "Bearer sk-live-" + strings.ToLower(rand.Text()) }

func (s *advSuite) secrets() []string {
	core := strings.TrimPrefix(s.secret, "Bearer ")
	sig := func(tok string) string { return tok[strings.LastIndexByte(tok, '.')+1:] }
	return []string{core, sig(s.jwt), sig(s.token)}
}

// ---- requests ----

const advToolCall = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"broadcast_get","arguments":{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}}}`

// post sends body to url with the headers of a well-behaved MCP client
// (bearer token, JSON, both Accepts, a legacy protocol version), changed by
// mods.
func (s *advSuite) post(t *testing.T, url string, body []byte, mods ...func(http.Header)) advAnswer {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	req.Header.Set("Authorization", "Bearer "+s.token)
	for _, m := range mods {
		m(req.Header)
	}
	if h := req.Header.Get("Host"); h != "" {
		req.Host = h
		req.Header.Del("Host")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := parseRPC(b)
	a.Status = resp.StatusCode
	a.raw = b
	return a
}

func (s *advSuite) gateway(t *testing.T, body string, mods ...func(http.Header)) advAnswer {
	return s.post(t, stack.MCPURL(), []byte(body), mods...)
}

func (s *advSuite) front(t *testing.T, body string, mods ...func(http.Header)) advAnswer {
	return s.post(t, stack.AgentCoreURL(), []byte(body), mods...)
}

// parseRPC reads a JSON-RPC answer (or a batch of them): its error code,
// or its result's tool error code and reason.
func parseRPC(b []byte) advAnswer {
	var a advAnswer
	t := bytes.TrimSpace(b)
	if len(t) > 0 && t[0] == '[' {
		var msgs []json.RawMessage
		_ = json.Unmarshal(t, &msgs)
		for _, m := range msgs {
			a.Batch = append(a.Batch, parseRPC(m))
		}
		// Answers are matched by position only where ids are unique; the
		// suite's batches give each element its own id and sort by it.
		sort.SliceStable(a.Batch, func(i, j int) bool { return string(a.Batch[i].raw) < string(a.Batch[j].raw) })
		return a
	}
	var msg struct {
		ID     json.RawMessage       `json:"id"`
		Error  *struct{ Code int64 } `json:"error"`
		Result json.RawMessage       `json:"result"`
	}
	if json.Unmarshal(t, &msg) != nil {
		return a
	}
	a.raw = msg.ID
	if msg.Error != nil {
		a.RPC = msg.Error.Code
	}
	a.Tool, a.Reason = toolErrorOf(msg.Result)
	return a
}

// toolErrorOf reads the {error, details.reason} body of an isError
// CallToolResult.
func toolErrorOf(result []byte) (code, reason string) {
	var res struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if json.Unmarshal(result, &res) != nil || !res.IsError || len(res.Content) == 0 {
		return "", ""
	}
	var body struct {
		Error   string `json:"error"`
		Details struct {
			Reason string `json:"reason"`
		} `json:"details"`
	}
	_ = json.Unmarshal([]byte(res.Content[0].Text), &body)
	return body.Error, body.Details.Reason
}

// invoke calls function on the Invoke API over plain HTTP (so that every
// refusal is seen as sent), with an optional AgentCore client context.
func invokeHTTP(t *testing.T, function string, payload []byte, clientContext []byte, mods ...func(http.Header)) advAnswer {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, stack.InvokeURL()+"/2015-03-31/functions/"+function+"/invocations", bytes.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	if clientContext != nil {
		req.Header.Set("X-Amz-Client-Context", base64.StdEncoding.EncodeToString(clientContext))
	}
	for _, m := range mods {
		m(req.Header)
	}
	// Signed as the operator (an insider with lambda:InvokeFunction), as
	// the SDK signs: the Invoke API checks the signature and IAM first.
	sum := sha256.Sum256(payload)
	if err := v4.NewSigner().SignHTTP(t.Context(), aws.Credentials{AccessKeyID: localtest.OperatorKeyID, SecretAccessKey: localtest.OperatorSecret},
		req, hex.EncodeToString(sum[:]), "lambda", "us-east-1", time.Now()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("invoke %s: %v", function, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := advAnswer{Status: resp.StatusCode, Lambda: resp.Header.Get("X-Amzn-ErrorType"), FunctionError: resp.Header.Get("X-Amz-Function-Error"), raw: b}
	if a.Lambda != "" || a.FunctionError != "" {
		return a
	}
	// An envelope answer: {"mcpfn","callId","result"|"error"}; an AgentCore
	// answer: a CallToolResult; a JSON-RPC answer: {"jsonrpc",…}.
	var env struct {
		Version string                `json:"mcpfn"`
		Error   *struct{ Code int64 } `json:"error"`
		Result  json.RawMessage       `json:"result"`
	}
	_ = json.Unmarshal(b, &env)
	switch {
	case env.Error != nil:
		a.RPC = env.Error.Code
	case env.Result != nil:
		a.Tool, a.Reason = toolErrorOf(env.Result)
	default:
		if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '[' {
			a.Batch = parseRPC(b).Batch
		} else {
			a.Tool, a.Reason = toolErrorOf(b)
		}
	}
	return a
}

// envelope is a delete envelope for callID; sign it with s.sign.
func advEnvelope(callID string, args string) map[string]any {
	return map[string]any{
		"mcpfn": "1", "callId": callID,
		"params": map[string]any{"name": "broadcast_delete", "arguments": json.RawMessage(args)},
	}
}

// signer is a call-token signer named name holding tool's key (the key of
// the function keyOf serves) for function.
func (s *advSuite) signer(t *testing.T, name, keyOf, tool, function string) *calltoken.Signer {
	t.Helper()
	ring, err := calltoken.KeyringFromSecrets([]byte(s.keys.Tools[keyOf].Secret))
	if err != nil {
		t.Fatal(err)
	}
	sg := calltoken.NewSigner(name)
	sg.Add(tool, function, ring, nil)
	return sg
}

func (s *advSuite) callToken(t *testing.T, sg *calltoken.Signer, c calltoken.Call) string {
	t.Helper()
	if c.Caller == nil {
		c.Caller = &calltoken.Identity{Subject: s.subject, AuthMethod: "jwt", Issuer: stack.Issuer(), Scopes: []string{demoScope}}
	}
	if c.Expires.IsZero() {
		c.Expires = time.Now().Add(time.Minute)
	}
	tok, err := sg.Sign(c)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// gatewayToken signs like the gateway for broadcast_delete.
func (s *advSuite) deleteToken(t *testing.T, callID, args string) string {
	return s.callToken(t, s.signer(t, calltoken.SignerGateway, "broadcast_delete", "broadcast_delete", "BroadcastDeleteFunction"),
		calltoken.Call{Tool: "broadcast_delete", CallID: callID, Args: []byte(args)})
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// agentCoreContext is the client context AgentCore Gateway sends a Lambda
// target, naming tool; extra entries are added to custom.
func agentCoreContext(tool, requestID string, extra map[string]string) []byte {
	custom := map[string]string{
		"bedrockAgentCoreToolName":       tool,
		"bedrockAgentCoreAwsRequestId":   requestID,
		"bedrockAgentCoreMcpMessageId":   "1",
		"bedrockAgentCoreGatewayId":      "gw-adv",
		"bedrockAgentCoreTargetId":       "tgt-adv",
		"bedrockAgentCoreMessageVersion": "1.0",
	}
	for k, v := range extra {
		custom[k] = v
	}
	return mustJSON(map[string]any{"custom": custom})
}

// deep nests n levels: open, then 1, then close, n times each.
func deep(open, close string, n int) string {
	return strings.Repeat(open, n) + "1" + strings.Repeat(close, n)
}

// jwtWith signs claims (the stack's issuer and audience unless set) with
// method and key, under kid.
func jwtWith(t *testing.T, method jwt.SigningMethod, key any, kid string, claims jwt.MapClaims) string {
	t.Helper()
	c := jwt.MapClaims{"iss": stack.Issuer(), "aud": localtest.Audience, "iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()}
	for k, v := range claims {
		c[k] = v
	}
	tok := jwt.NewWithClaims(method, c)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// ---- rows ----

// rowsSince returns every audit row that started at or after t0. The suite
// runs its cases one after another, so they are the case's rows.
func rowsSince(t *testing.T, t0 time.Time) []advRow {
	t.Helper()
	from := t0.Add(-time.Second).UTC().Format("2006-01-02T15:04:05")
	p := dynamodb.NewScanPaginator(stack.DynamoDB(), &dynamodb.ScanInput{
		TableName: aws.String(stack.AuditTable()), ConsistentRead: aws.Bool(true),
		FilterExpression:          aws.String("startedAt >= :t"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":t": &types.AttributeValueMemberS{Value: from}},
	})
	var out []advRow
	for p.HasMorePages() {
		page, err := p.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range page.Items {
			var r advRow
			if err := attributevalue.UnmarshalMap(item, &r.Row); err != nil {
				t.Fatal(err)
			}
			if r.StartedAt.Before(t0) {
				continue
			}
			r.item = item
			out = append(out, r)
		}
	}
	return out
}

// leaks names the attributes of item that contain one of secrets.
func leaks(item map[string]types.AttributeValue, secrets []string) []string {
	var out []string
	var walk func(path string, v types.AttributeValue)
	has := func(path, s string) {
		for _, sec := range secrets {
			if sec != "" && strings.Contains(s, sec) {
				out = append(out, path)
				return
			}
		}
	}
	walk = func(path string, v types.AttributeValue) {
		switch x := v.(type) {
		case *types.AttributeValueMemberS:
			has(path, x.Value)
		case *types.AttributeValueMemberB:
			has(path, string(x.Value))
		case *types.AttributeValueMemberSS:
			for _, s := range x.Value {
				has(path, s)
			}
		case *types.AttributeValueMemberM:
			for k, e := range x.Value {
				has(path+"{key}", k)
				walk(path+"."+k, e)
			}
		case *types.AttributeValueMemberL:
			for i, e := range x.Value {
				walk(fmt.Sprintf("%s[%d]", path, i), e)
			}
		}
	}
	for k, v := range item {
		walk(k, v)
	}
	return out
}

// toolFunctions are the functions that serve tools (and write rows).
func toolFunctions() []string {
	var out []string
	for _, f := range stack.Functions() {
		if !strings.Contains(f, "Interceptor") {
			out = append(out, f)
		}
	}
	return out
}

func invocations() map[string]int64 {
	out := map[string]int64{}
	for _, f := range toolFunctions() {
		out[f] = stack.Invocations(f)
	}
	return out
}

// ---- the suite ----

func TestAdversarialSuite(t *testing.T) {
	keys, err := localtest.LoadKeys(stackDir(t))
	if err != nil {
		t.Fatal(err)
	}
	s := &advSuite{keys: keys, secret: newSecret()}
	if s.jwt, err = stack.MintToken(map[string]any{"sub": "planted"}); err != nil {
		t.Fatal(err)
	}
	if !audit.IsSecretValue(s.secret) || !audit.IsSecretValue(s.jwt) {
		t.Fatal("the planted values are not secret-shaped")
	}
	cases := advCases(t, s)
	if len(cases) < 40 {
		t.Fatalf("%d classes, want at least 40", len(cases))
	}
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.class] {
			t.Fatalf("class %q twice", c.class)
		}
		seen[c.class] = true
		t.Run(c.class, func(t *testing.T) {
			s.subject = unique("adv")
			if s.token, err = stack.MintToken(map[string]any{"sub": s.subject, "scope": demoScope}); err != nil {
				t.Fatal(err)
			}
			before := invocations()
			t0 := time.Now()
			got, extra := c.run(t, s)
			reached := 0
			for f, n := range invocations() {
				reached += int(n - before[f])
			}
			checkAnswer(t, got, c.want)
			if err := stack.Settle(t.Context()); err != nil {
				t.Fatal(err)
			}
			rows := rowsSince(t, t0)
			var fnRows int
			for _, r := range rows {
				if r.Stage != "gateway" {
					fnRows++
				}
				if l := leaks(r.item, append(s.secrets(), extra...)); len(l) > 0 {
					t.Errorf("row %s: a secret in %v", r.Key(), l)
				}
				code := r.ErrorCode
				if r.OK {
					code = "ok"
				}
				if c.rowCode != "" && code != c.rowCode {
					t.Errorf("row %s (stage %s): code %q, want %q", r.Key(), r.Stage, code, c.rowCode)
				}
			}
			switch {
			case reached > 0 && fnRows < reached && !c.replay:
				t.Errorf("tool functions invoked %d times, %d rows of theirs", reached, fnRows)
			case reached == 0 && fnRows > 0:
				t.Errorf("no tool function invoked, yet %d function rows", fnRows)
			case c.rowCode != "" && len(rows) == 0:
				t.Errorf("no audit row, want one with %s", c.rowCode)
			case c.rowCode == "" && c.check == nil && len(rows) > 0:
				t.Errorf("%d rows (%s: %s), want none", len(rows), rows[0].Key(), rows[0].ErrorCode)
			case c.gatewayRow && (len(rows) == 0 || rows[0].Stage != "gateway"):
				t.Errorf("want the gateway's row, got %d rows", len(rows))
			}
			if c.check != nil {
				c.check(t, s, got, rows)
			}
			if t.Failed() {
				t.Logf("answer: %s: %.600s", got, got.raw)
			}
		})
	}

	// The stack still serves: a good call through each front.
	t.Run("still serves", func(t *testing.T) {
		cs := connect(t, unique("adv-after"))
		id := call(t, cs, "broadcast_create", map[string]any{"channel": unique("adv"), "text": "after the suite"})["id"].(string)
		if got := call(t, cs, "broadcast_get", map[string]any{"id": id}); got["id"] != id {
			t.Errorf("get after the suite: %v", got)
		}
		ac := connectAgentCore(t, unique("adv-after-ac"), demoScope)
		if got := call(t, ac, "broadcast-get___broadcast_get", map[string]any{"id": id}); got["id"] != id {
			t.Errorf("AgentCore get after the suite: %v", got)
		}
		id2 := call(t, cs, "broadcast_create", map[string]any{"channel": unique("adv"), "text": "x"})["id"].(string)
		callID := unique("adv-after")
		env, err := keys.SignEnvelope(mustJSON(advEnvelope(callID, `{"id":"`+id2+`"}`)),
			&calltoken.Identity{Subject: "adv-after", AuthMethod: "jwt", Scopes: []string{demoScope}}, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if code, details := errorOf(t, invokeRaw(t, "BroadcastDeleteFunction", env)); code != "" {
			t.Errorf("signed delete after the suite: %s %s", code, details)
		}
	})
}

// checkAnswer compares got with want on the fields want sets; it always
// asserts no 5xx and no function error.
func checkAnswer(t *testing.T, got, want advAnswer) {
	t.Helper()
	if got.Status >= 500 {
		t.Errorf("HTTP %d (a 5xx)", got.Status)
	}
	if got.FunctionError != "" {
		t.Errorf("the function crashed: %s", got.FunctionError)
	}
	if want.Status == 0 && got.Status != 0 {
		want.Status = http.StatusOK
	}
	if got.Status != want.Status {
		t.Errorf("HTTP %d, want %d", got.Status, want.Status)
	}
	if got.Lambda != want.Lambda {
		t.Errorf("Invoke API error %q, want %q", got.Lambda, want.Lambda)
	}
	if got.RPC != want.RPC {
		t.Errorf("JSON-RPC error %d, want %d", got.RPC, want.RPC)
	}
	if got.Tool != want.Tool {
		t.Errorf("tool error %q, want %q", got.Tool, want.Tool)
	}
	if want.Reason != "" && got.Reason != want.Reason {
		t.Errorf("reason %q, want %q", got.Reason, want.Reason)
	}
	if want.Batch != nil {
		if len(got.Batch) != len(want.Batch) {
			t.Errorf("%d batch answers, want %d", len(got.Batch), len(want.Batch))
			return
		}
		for i := range want.Batch {
			w := want.Batch[i]
			w.Status = 0 // one HTTP status for the batch
			checkAnswer(t, got.Batch[i], w)
		}
	}
}

func header(k, v string) func(http.Header) { return func(h http.Header) { h.Set(k, v) } }
func noHeader(k string) func(http.Header)  { return func(h http.Header) { h.Del(k) } }

// advCases is the list of classes; docs/security.md lists them.
func advCases(t *testing.T, s *advSuite) []advCase {
	// Every envelope's call id is unique (unique), even the hand-written
	// ones: a call id's row key outlives the run, and the same id in a
	// second run (go test -count=2) would find the first run's row and be
	// refused as another execution of that call.
	secret := func() string { return s.secret }
	createArgs := func() string {
		return `{"channel":"adv","text":` + string(mustJSON(secret())) + `}`
	}
	toolCall := func(tool, args string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`
	}
	gw := func(body string, mods ...func(http.Header)) func(*testing.T, *advSuite) (advAnswer, []string) {
		return func(t *testing.T, s *advSuite) (advAnswer, []string) { return s.gateway(t, body, mods...), nil }
	}
	withToken := func(tok func(t *testing.T) string) func(*testing.T, *advSuite) (advAnswer, []string) {
		return func(t *testing.T, s *advSuite) (advAnswer, []string) {
			bad := tok(t)
			sig := bad[strings.LastIndexByte(bad, '.')+1:]
			return s.gateway(t, advToolCall, header("Authorization", "Bearer "+bad)), []string{sig}
		}
	}
	issuerKey := func(t *testing.T) *rsa.PrivateKey {
		blk, _ := pem.Decode([]byte(s.keys.IssuerKey))
		k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		return k.(*rsa.PrivateKey)
	}
	// inv sends an envelope built by mk to the delete function.
	inv := func(mk func(t *testing.T, s *advSuite, callID string) ([]byte, []string)) func(*testing.T, *advSuite) (advAnswer, []string) {
		return func(t *testing.T, s *advSuite) (advAnswer, []string) {
			payload, extra := mk(t, s, unique("adv-call"))
			return invokeHTTP(t, "BroadcastDeleteFunction", payload, nil), extra
		}
	}
	// signedEnv is a delete envelope for args whose token is tok (made by
	// sign for the envelope's call id).
	signedEnv := func(args string, sign func(t *testing.T, s *advSuite, callID string) string) func(t *testing.T, s *advSuite, callID string) ([]byte, []string) {
		return func(t *testing.T, s *advSuite, callID string) ([]byte, []string) {
			env := advEnvelope(callID, args)
			tok := sign(t, s, callID)
			env["callToken"] = tok
			return mustJSON(env), []string{tok[strings.LastIndexByte(tok, '.')+1:]}
		}
	}
	raw := func(payload []byte) func(*testing.T, *advSuite) (advAnswer, []string) {
		return func(t *testing.T, s *advSuite) (advAnswer, []string) {
			return invokeHTTP(t, "BroadcastDeleteFunction", payload, nil), nil
		}
	}
	// ac invokes the delete function as AgentCore would, with payload and
	// a client context naming tool.
	ac := func(tool string, payload func(t *testing.T, s *advSuite, requestID string) (string, []string), extra map[string]string) func(*testing.T, *advSuite) (advAnswer, []string) {
		return func(t *testing.T, s *advSuite) (advAnswer, []string) {
			reqID := unique("adv-ac")
			p, sec := payload(t, s, reqID)
			return invokeHTTP(t, "BroadcastDeleteFunction", []byte(p), agentCoreContext(tool, reqID, extra)), sec
		}
	}
	const acDelete = "broadcast-delete___broadcast_delete"
	literal := func(p string) func(*testing.T, *advSuite, string) (string, []string) {
		return func(*testing.T, *advSuite, string) (string, []string) { return p, nil }
	}
	interceptorToken := func(t *testing.T, s *advSuite, requestID, args string) string {
		return s.callToken(t, s.signer(t, calltoken.SignerInterceptor, "broadcast_delete", "broadcast_delete", "BroadcastDeleteFunction"),
			calltoken.Call{Tool: "broadcast_delete", CallID: requestID + ":1", Args: []byte(args)})
	}
	withMcpfn := func(args string, mcpfn func(t *testing.T, s *advSuite, requestID string) string) func(*testing.T, *advSuite, string) (string, []string) {
		return func(t *testing.T, s *advSuite, requestID string) (string, []string) {
			v := mcpfn(t, s, requestID)
			var m map[string]json.RawMessage
			_ = json.Unmarshal([]byte(args), &m)
			m["_mcpfn"] = json.RawMessage(v)
			var sec []string
			if i := strings.LastIndexByte(v, '.'); i > 0 {
				sec = append(sec, strings.Trim(v[i+1:], `"}`))
			}
			return string(mustJSON(m)), sec
		}
	}
	frontCall := func(tool, args string) string {
		return toolCall(tool, args)
	}

	unauthorized := advAnswer{Tool: "UNAUTHORIZED"}
	reason := func(r calltoken.Reason) advAnswer { return advAnswer{Tool: "UNAUTHORIZED", Reason: string(r)} }

	return []advCase{
		// ---- (a) the gateway over HTTP ----
		// Bodies.
		{class: "gateway/body/empty", run: gw(""), want: advAnswer{Status: 400}},
		{class: "gateway/body/truncated", run: gw(advToolCall[:40]), want: advAnswer{Status: 400}},
		{class: "gateway/body/number", run: gw(`42`), want: advAnswer{Status: 400}},
		{class: "gateway/body/string", run: gw(`"tools/call"`), want: advAnswer{Status: 400}},
		{class: "gateway/body/null", run: gw(`null`), want: advAnswer{Status: 400}},
		{class: "gateway/body/deep-array", run: gw(deep("[", "]", 100_000), header("Mcp-Protocol-Version", "2025-03-26")), want: advAnswer{Status: 400, RPC: -32700}},
		{class: "gateway/body/deep-arguments", run: gw(toolCall("broadcast_get", deep(`{"a":`, "}", 500))), want: advAnswer{RPC: -32600}, rowCode: "BAD_REQUEST"},
		{class: "gateway/body/deep-object-in-arguments", run: gw(toolCall("broadcast_get", deep(`{"a":`, "}", 100_000))), want: advAnswer{Status: 400}},
		{class: "gateway/body/5MB", run: gw(toolCall("broadcast_create", `{"channel":"adv","text":"`+strings.Repeat("x", 5<<20)+`"}`)), want: advAnswer{Status: 413}},
		{class: "gateway/body/invalid-utf8", run: gw(toolCall("broadcast_create", `{"channel":"adv","text":"`+"\xff\xfe"+`"}`)), want: advAnswer{Status: 400, RPC: -32700}},
		{class: "gateway/body/duplicate-keys", run: func(t *testing.T, s *advSuite) (advAnswer, []string) {
			// The tool name twice: every parser on the path must take the
			// same one (the last), or the token and the audit would name
			// another tool than the one that ran.
			return s.gateway(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"broadcast_delete","name":"broadcast_get","arguments":{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA","id":"BBBBBBBBBBBBBBBBBBBBBBBBBB"}}}`), nil
		}, want: advAnswer{Tool: "NOT_FOUND"}, rowCode: "NOT_FOUND", check: func(t *testing.T, s *advSuite, _ advAnswer, rows []advRow) {
			if len(rows) != 1 || rows[0].Tool != "broadcast_get" || !strings.Contains(rows[0].ArgsPreview, "BBBBBBBBBBBBBBBBBBBBBBBBBB") || rows[0].CallerSubject != s.subject {
				t.Errorf("rows %+v: want one broadcast_get row for BBBBBBBBBBBBBBBBBBBBBBBBBB by %s", rows, s.subject)
			}
		}},
		{class: "gateway/body/huge-number", run: gw(toolCall("broadcast_list", `{"channel":"adv","limit":1e400}`)), want: advAnswer{Tool: "VALIDATION_ERROR"}, rowCode: "VALIDATION_ERROR"},
		{class: "gateway/type/jsonrpc-version", run: gw(`{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"broadcast_get","arguments":{"id":"b-1"}}}`), want: advAnswer{Status: 400}},
		{class: "gateway/type/id-object", run: gw(`{"jsonrpc":"2.0","id":{"a":1},"method":"tools/call","params":{"name":"broadcast_get","arguments":{"id":"b-1"}}}`), want: advAnswer{Status: 400}},
		{class: "gateway/type/method-number", run: gw(`{"jsonrpc":"2.0","id":1,"method":7,"params":{}}`), want: advAnswer{Status: 400}},
		{class: "gateway/type/params-string", run: gw(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"broadcast_get"}`), want: advAnswer{RPC: -32602}},
		{class: "gateway/type/name-number", run: gw(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5,"arguments":{}}}`), want: advAnswer{RPC: -32602}},
		{class: "gateway/type/unknown-tool", run: gw(toolCall("no_such_tool", `{}`)), want: advAnswer{RPC: -32602}},
		{class: "gateway/type/arguments-array", run: gw(toolCall("broadcast_create", `["adv",`+string(mustJSON(s.secret))+`]`)), want: advAnswer{Tool: "VALIDATION_ERROR"}, rowCode: "VALIDATION_ERROR"},
		{class: "gateway/type/argument-wrong-type", run: gw(toolCall("broadcast_create", `{"channel":["adv"],"text":`+string(mustJSON(s.secret))+`}`)), want: advAnswer{Tool: "VALIDATION_ERROR"}, rowCode: "VALIDATION_ERROR"},
		{class: "gateway/type/secret-in-argument", run: func(t *testing.T, s *advSuite) (advAnswer, []string) {
			return s.gateway(t, toolCall("broadcast_get", `{"id":`+string(mustJSON(s.secret))+`}`)), nil
		}, want: advAnswer{Tool: "VALIDATION_ERROR"}, rowCode: "VALIDATION_ERROR"},
		{class: "gateway/type/meta-number", run: gw(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"broadcast_get","arguments":{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"},"_meta":5}}`), want: advAnswer{RPC: -32602}},
		{class: "gateway/ok/secret-in-text", run: func(t *testing.T, s *advSuite) (advAnswer, []string) {
			return s.gateway(t, toolCall("broadcast_create", createArgs()), header("Mcp-Session-Id", s.secret), header("User-Agent", s.secret)), nil
		}, rowCode: "ok"},
		{class: "gateway/ok/secret-in-meta", run: func(t *testing.T, s *advSuite) (advAnswer, []string) {
			sec := string(mustJSON(s.secret))
			return s.gateway(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"broadcast_create","arguments":{"channel":"adv","text":"x"},`+
				`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},`+
				`"io.modelcontextprotocol/clientInfo":{"name":`+sec+`,"version":`+sec+`},"traceparent":`+sec+`,"progressToken":`+sec+`}}}`,
				header("Mcp-Protocol-Version", "2026-07-28"), header("Mcp-Method", "tools/call"), header("Mcp-Name", "broadcast_create")), nil
		}, rowCode: "ok"},
		{class: "gateway/header/secret-trace-id", run: func(t *testing.T, s *advSuite) (advAnswer, []string) {
			return s.gateway(t, toolCall("broadcast_create", `{"channel":"adv","text":"x"}`),
				header("X-Amzn-Trace-Id", "Root="+strings.TrimPrefix(s.secret, "Bearer ")+";Parent="+strings.TrimPrefix(s.secret, "Bearer ")+";Sampled=1")), nil
		}, rowCode: "ok"},
		// Batches (2025-03-26).
		{class: "gateway/batch/nested", run: gw(`[[`+advToolCall+`]]`, header("Mcp-Protocol-Version", "2025-03-26")), want: advAnswer{Batch: []advAnswer{{RPC: -32600}}}},
		{class: "gateway/batch/in-a-later-protocol", run: gw(`[` + advToolCall + `]`), want: advAnswer{Status: 400, RPC: -32600}},
		{class: "gateway/batch/empty", run: gw(`[]`, header("Mcp-Protocol-Version", "2025-03-26")), want: advAnswer{Status: 400, RPC: -32600}},
		{class: "gateway/batch/oversized", run: gw(`[`+strings.TrimSuffix(strings.Repeat(advToolCall+",", 65), ",")+`]`, header("Mcp-Protocol-Version", "2025-03-26")), want: advAnswer{Status: 400, RPC: -32600}},
		{class: "gateway/batch/mixed", run: gw(`[`+
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"broadcast_get","arguments":{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}}},`+
			`42,`+
			`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"broadcast_get","arguments":{"id":5}}}]`,
			header("Mcp-Protocol-Version", "2025-03-26")),
			want: advAnswer{Batch: []advAnswer{{Tool: "NOT_FOUND"}, {Tool: "VALIDATION_ERROR"}, {RPC: -32600}}}, // by id: 1, 3, null
			check: func(t *testing.T, s *advSuite, _ advAnswer, rows []advRow) {
				codes := map[string]int{}
				for _, r := range rows {
					codes[r.ErrorCode]++
					if r.CallerSubject != s.subject {
						t.Errorf("row %s names %q", r.Key(), r.CallerSubject)
					}
				}
				if len(rows) != 2 || codes["NOT_FOUND"] != 1 || codes["VALIDATION_ERROR"] != 1 {
					t.Errorf("rows %v, want one NOT_FOUND and one VALIDATION_ERROR", codes)
				}
			}},
		// Headers.
		{class: "gateway/header/cross-origin", run: gw(advToolCall, header("Origin", "https://evil.example"), header("Sec-Fetch-Site", "cross-site")), want: advAnswer{Status: 403}},
		{class: "gateway/header/foreign-host", run: gw(advToolCall, header("Host", "evil.example")), want: advAnswer{Status: 403}},
		{class: "gateway/header/content-type", run: gw(advToolCall, header("Content-Type", "text/plain")), want: advAnswer{Status: 415}},
		{class: "gateway/header/no-accept", run: gw(advToolCall, noHeader("Accept")), want: advAnswer{Status: 400}},
		{class: "gateway/header/protocol-version", run: gw(advToolCall, header("Mcp-Protocol-Version", "1999-01-01")), want: advAnswer{Status: 400}},
		{class: "gateway/header/oversized", run: gw(advToolCall, header("X-Pad", strings.Repeat("a", 2<<20))), want: advAnswer{Status: 431}},
		// Tokens.
		{class: "gateway/token/none", run: gw(advToolCall, noHeader("Authorization")), want: advAnswer{Status: 401}},
		{class: "gateway/token/junk", run: gw(advToolCall, header("Authorization", "Bearer not-a-jwt")), want: advAnswer{Status: 401}},
		{class: "gateway/token/alg-none", run: withToken(func(t *testing.T) string {
			return jwtWith(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, s.keys.KID, jwt.MapClaims{"sub": "mallory", "scope": demoScope})
		}), want: advAnswer{Status: 401}},
		{class: "gateway/token/hs256-with-issuer-public-key", run: withToken(func(t *testing.T) string {
			der, _ := x509.MarshalPKIXPublicKey(&issuerKey(t).PublicKey)
			pub := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
			return jwtWith(t, jwt.SigningMethodHS256, pub, s.keys.KID, jwt.MapClaims{"sub": "mallory", "scope": demoScope})
		}), want: advAnswer{Status: 401}},
		{class: "gateway/token/expired", run: withToken(func(t *testing.T) string {
			return jwtWith(t, jwt.SigningMethodRS256, issuerKey(t), s.keys.KID, jwt.MapClaims{"sub": "mallory", "exp": time.Now().Add(-time.Hour).Unix(), "iat": time.Now().Add(-2 * time.Hour).Unix()})
		}), want: advAnswer{Status: 401}},
		{class: "gateway/token/wrong-audience", run: withToken(func(t *testing.T) string {
			return jwtWith(t, jwt.SigningMethodRS256, issuerKey(t), s.keys.KID, jwt.MapClaims{"sub": "mallory", "aud": "another-api"})
		}), want: advAnswer{Status: 401}},
		{class: "gateway/token/wrong-issuer", run: withToken(func(t *testing.T) string {
			return jwtWith(t, jwt.SigningMethodRS256, issuerKey(t), s.keys.KID, jwt.MapClaims{"sub": "mallory", "iss": "https://evil.example"})
		}), want: advAnswer{Status: 401}},
		{class: "gateway/token/unknown-kid", run: withToken(func(t *testing.T) string {
			k, err := rsa.GenerateKey(rand.Reader, 2048)
			if err != nil {
				t.Fatal(err)
			}
			return jwtWith(t, jwt.SigningMethodRS256, k, "adv-"+rand.Text()[:8], jwt.MapClaims{"sub": "mallory", "scope": demoScope})
		}), want: advAnswer{Status: 401}},
		{class: "gateway/token/missing-scope", run: func(t *testing.T, s *advSuite) (advAnswer, []string) {
			tok, err := stack.MintToken(map[string]any{"sub": s.subject})
			if err != nil {
				t.Fatal(err)
			}
			return s.gateway(t, toolCall("broadcast_delete", `{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}`), header("Authorization", "Bearer "+tok)), []string{tok[strings.LastIndexByte(tok, '.')+1:]}
		}, want: advAnswer{Tool: "FORBIDDEN"}, rowCode: "FORBIDDEN", gatewayRow: true},

		// ---- (b) the Invoke API to a tool function ----
		// Bodies.
		// Lambda passes "{}" for an empty payload, which is no invocation.
		{class: "invoke/body/empty", run: raw(nil), want: advAnswer{RPC: -32600}, rowCode: "BAD_REQUEST"},
		{class: "invoke/body/truncated", run: raw([]byte(`{"mcpfn":"1","callId":"` + unique("x") + `","par`)), want: advAnswer{Status: 400, Lambda: "InvalidRequestContentException"}},
		{class: "invoke/body/non-object", run: raw([]byte(`[1,"two",null]`)), want: advAnswer{Batch: []advAnswer{{RPC: -32600}, {RPC: -32600}, {RPC: -32600}}}, rowCode: "BAD_REQUEST"},
		{class: "invoke/body/deep", run: raw([]byte(deep(`{"a":`, "}", 100_000))), want: advAnswer{Status: 400, Lambda: "InvalidRequestContentException"}},
		{class: "invoke/body/deep-under-limit", run: raw([]byte(`{"mcpfn":"1","callId":"` + unique("deep") + `","params":{"name":"broadcast_delete","arguments":` + deep(`{"a":`, "}", 5000) + `}}`)), want: advAnswer{RPC: -32600}, rowCode: "BAD_REQUEST"},
		{class: "invoke/body/5MB", run: raw([]byte(`{"mcpfn":"1","callId":"` + unique("big") + `","params":{"name":"broadcast_delete","arguments":{"id":"` + strings.Repeat("x", 5<<20) + `"}}}`)), want: reason(calltoken.ReasonMissing), rowCode: "UNAUTHORIZED"},
		{class: "invoke/body/7MB", run: raw([]byte(`{"x":"` + strings.Repeat("x", 7<<20) + `"}`)), want: advAnswer{Status: 413, Lambda: "RequestTooLargeException"}},
		{class: "invoke/body/invalid-utf8", run: raw([]byte(`{"mcpfn":"1","callId":"` + unique("u") + `","params":{"name":"broadcast_delete","arguments":{"id":"` + "\xff" + `"}}}`)), want: advAnswer{RPC: -32700}, rowCode: "BAD_REQUEST"},
		{class: "invoke/body/duplicate-keys", run: inv(func(t *testing.T, s *advSuite, callID string) ([]byte, []string) {
			// Signed for one call id, the envelope names it and then
			// another: the later key wins everywhere, and the token is
			// for the earlier one.
			tok := s.deleteToken(t, callID, `{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}`)
			p := `{"mcpfn":"1","callId":"` + callID + `","callId":"` + callID + `-2","params":{"name":"broadcast_delete","arguments":{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}},"callToken":"` + tok + `"}`
			return []byte(p), []string{tok[strings.LastIndexByte(tok, '.')+1:]}
		}), want: reason(calltoken.ReasonCallID), rowCode: "UNAUTHORIZED"},
		{class: "invoke/body/huge-number", run: raw([]byte(`{"mcpfn":"1","callId":1e400,"params":{"name":"broadcast_delete","arguments":{}}}`)), want: advAnswer{RPC: -32600}, rowCode: "BAD_REQUEST"},
		{class: "invoke/type/params-string", run: raw([]byte(`{"mcpfn":"1","callId":"` + unique("p") + `","params":"broadcast_delete"}`)), want: advAnswer{RPC: -32600}, rowCode: "BAD_REQUEST"},
		{class: "invoke/type/name-number", run: raw([]byte(`{"mcpfn":"1","callId":"` + unique("n") + `","params":{"name":5}}`)), want: advAnswer{RPC: -32600}, rowCode: "BAD_REQUEST"},
		{class: "invoke/type/caller-string", run: raw([]byte(`{"mcpfn":"1","callId":"` + unique("c") + `","params":{"name":"broadcast_delete","arguments":{}},"caller":"mallory"}`)), want: advAnswer{RPC: -32600}, rowCode: "BAD_REQUEST"},
		{class: "invoke/type/jsonrpc", run: raw([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"broadcast_delete","arguments":{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}}}`)), want: advAnswer{Tool: "UNAUTHORIZED"}, rowCode: "UNAUTHORIZED"},
		{class: "invoke/header/secret-trace-id", run: func(t *testing.T, s *advSuite) (advAnswer, []string) {
			core := strings.TrimPrefix(s.secret, "Bearer ")
			return invokeHTTP(t, "BroadcastDeleteFunction", []byte(`{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}`), agentCoreContext("broadcast-delete___broadcast_delete", unique("adv-ac"), nil),
				header("X-Amzn-Trace-Id", "Root="+core+";Parent="+core+";Sampled=1")), nil
		}, want: advAnswer{Tool: "UNAUTHORIZED"}, rowCode: "UNAUTHORIZED"},
		// Envelopes.
		{class: "envelope/forged-caller", run: inv(func(t *testing.T, s *advSuite, callID string) ([]byte, []string) {
			env := advEnvelope(callID, `{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}`)
			env["caller"] = map[string]any{"subject": "mallory", "authMethod": "jwt", "scopes": []string{demoScope}, "userAgent": s.secret}
			return mustJSON(env), nil
		}), want: reason(calltoken.ReasonMissing), rowCode: "UNAUTHORIZED", check: func(t *testing.T, _ *advSuite, _ advAnswer, rows []advRow) {
			if len(rows) != 1 || rows[0].CallerSubject != "" || rows[0].UnverifiedCaller != "mallory" {
				t.Errorf("rows %+v: want one row naming no caller, mallory unverified", rows)
			}
		}},
		{class: "envelope/secret-call-id", run: func(t *testing.T, s *advSuite) (advAnswer, []string) {
			env := advEnvelope(s.secret, `{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}`)
			return invokeHTTP(t, "BroadcastDeleteFunction", mustJSON(env), nil), nil
		}, want: advAnswer{RPC: -32600}, rowCode: "BAD_REQUEST"},
		{class: "envelope/secret-attribution", run: inv(func(t *testing.T, s *advSuite, callID string) ([]byte, []string) {
			env := advEnvelope(callID, `{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}`)
			env["sessionId"] = s.secret
			env["traceHeader"] = "Root=" + strings.TrimPrefix(s.secret, "Bearer ") + ";Sampled=1"
			env["mcp"] = map[string]any{"era": "modern", "method": "tools/call", "protocolVersion": s.secret, "clientInfo": map[string]any{"name": s.secret, "version": s.jwt}}
			env["params"].(map[string]any)["_meta"] = map[string]any{"traceparent": s.secret}
			env["callToken"] = s.deleteToken(t, callID, `{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}`)
			return mustJSON(env), nil
		}), want: advAnswer{Tool: "NOT_FOUND"}, rowCode: "NOT_FOUND"},
		{class: "envelope/replayed", run: inv(func(t *testing.T, s *advSuite, callID string) ([]byte, []string) {
			env := advEnvelope(callID, `{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}`)
			env["callToken"] = s.deleteToken(t, callID, `{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}`)
			p := mustJSON(env)
			if first := invokeHTTP(t, "BroadcastDeleteFunction", p, nil); first.Tool != "NOT_FOUND" {
				t.Errorf("first delivery: %s, want NOT_FOUND", first)
			}
			return p, nil
		}), want: advAnswer{Tool: "CONFLICT"}, replay: true, check: func(t *testing.T, _ *advSuite, _ advAnswer, rows []advRow) {
			if len(rows) != 1 || rows[0].ErrorCode != "NOT_FOUND" {
				t.Errorf("rows %+v: want the first delivery's row kept", rows)
			}
		}},
		{class: "envelope/version-2", run: raw([]byte(`{"mcpfn":"2","callId":"` + unique("v2") + `","params":{"name":"broadcast_delete","arguments":{}}}`)), want: advAnswer{RPC: -32600}, rowCode: "BAD_REQUEST"},
		{class: "envelope/version-number", run: raw([]byte(`{"mcpfn":1,"callId":"` + unique("v1") + `","params":{"name":"broadcast_delete","arguments":{}}}`)), want: advAnswer{RPC: -32600}, rowCode: "BAD_REQUEST"},
		{class: "envelope/token-junk", run: inv(signedEnv(`{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}`, func(*testing.T, *advSuite, string) string { return "junk.junk.junk" })), want: reason(calltoken.ReasonMalformed), rowCode: "UNAUTHORIZED"},
		{class: "envelope/token-alg-none", run: inv(signedEnv(`{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}`, func(t *testing.T, s *advSuite, callID string) string {
			c := jwt.MapClaims{"iss": calltoken.SignerGateway, "aud": "BroadcastDeleteFunction", "cid": callID, "tool": "broadcast_delete",
				"args": calltoken.ArgsDigest([]byte(`{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}`)), "exp": time.Now().Add(time.Minute).Unix(),
				"caller": map[string]any{"subject": "mallory", "authMethod": "jwt", "scopes": []string{demoScope}}}
			tok := jwt.NewWithClaims(jwt.SigningMethodNone, c)
			tok.Header["typ"] = calltoken.TokenType
			str, _ := tok.SignedString(jwt.UnsafeAllowNoneSignatureType)
			return str
		})), want: reason(calltoken.ReasonAlgorithm), rowCode: "UNAUTHORIZED"},
		{class: "envelope/token-of-another-function", run: inv(signedEnv(`{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}`, func(t *testing.T, s *advSuite, callID string) string {
			// What a compromised broadcast_get can mint: its own key.
			return s.callToken(t, s.signer(t, calltoken.SignerGateway, "broadcast_get", "broadcast_delete", "BroadcastGetFunction"),
				calltoken.Call{Tool: "broadcast_delete", CallID: callID, Args: []byte(`{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}`)})
		})), want: unauthorized, rowCode: "UNAUTHORIZED"},
		{class: "envelope/token-for-another-audience", run: inv(signedEnv(`{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}`, func(t *testing.T, s *advSuite, callID string) string {
			return s.callToken(t, s.signer(t, calltoken.SignerGateway, "broadcast_delete", "broadcast_delete", "BroadcastGetFunction"),
				calltoken.Call{Tool: "broadcast_delete", CallID: callID, Args: []byte(`{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}`)})
		})), want: reason(calltoken.ReasonAudience), rowCode: "UNAUTHORIZED"},
		{class: "envelope/token-of-another-tool", run: inv(signedEnv(`{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}`, func(t *testing.T, s *advSuite, callID string) string {
			return s.callToken(t, s.signer(t, calltoken.SignerGateway, "broadcast_delete", "broadcast_get", "BroadcastDeleteFunction"),
				calltoken.Call{Tool: "broadcast_get", CallID: callID, Args: []byte(`{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}`)})
		})), want: reason(calltoken.ReasonTool), rowCode: "UNAUTHORIZED"},
		{class: "envelope/token-of-other-arguments", run: inv(signedEnv(`{"id":"CCCCCCCCCCCCCCCCCCCCCCCCCC"}`, func(t *testing.T, s *advSuite, callID string) string {
			return s.deleteToken(t, callID, `{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}`)
		})), want: reason(calltoken.ReasonArguments), rowCode: "UNAUTHORIZED"},
		{class: "envelope/token-of-another-call", run: inv(signedEnv(`{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}`, func(t *testing.T, s *advSuite, callID string) string {
			return s.deleteToken(t, callID+"-other", `{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}`)
		})), want: reason(calltoken.ReasonCallID), rowCode: "UNAUTHORIZED"},
		{class: "envelope/token-expired", run: inv(signedEnv(`{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}`, func(t *testing.T, s *advSuite, callID string) string {
			return s.callToken(t, s.signer(t, calltoken.SignerGateway, "broadcast_delete", "broadcast_delete", "BroadcastDeleteFunction"),
				calltoken.Call{Tool: "broadcast_delete", CallID: callID, Args: []byte(`{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}`), Expires: time.Now().Add(-time.Minute)})
		})), want: reason(calltoken.ReasonExpired), rowCode: "UNAUTHORIZED"},
		{class: "envelope/token-oversized", run: inv(signedEnv(`{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}`, func(t *testing.T, s *advSuite, callID string) string {
			return s.deleteToken(t, callID, `{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}`) + "." + strings.Repeat("A", calltoken.MaxTokenBytes)
		})), want: reason(calltoken.ReasonOversized), rowCode: "UNAUTHORIZED"},
		{class: "envelope/token-wrong-type", run: inv(func(t *testing.T, s *advSuite, callID string) ([]byte, []string) {
			env := advEnvelope(callID, `{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}`)
			env["callToken"] = map[string]any{"token": s.jwt}
			return mustJSON(env), nil
		}), want: advAnswer{RPC: -32600}, rowCode: "BAD_REQUEST"},

		// ---- (c) AgentCore: spoofed Lambda-target calls and the front ----
		{class: "agentcore/client-context-names-another-tool", run: ac("broadcast-get___broadcast_get", literal(`{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}`), nil), want: advAnswer{Tool: "BAD_REQUEST"}, rowCode: "BAD_REQUEST"},
		{class: "envelope/names-another-tool", run: inv(func(t *testing.T, s *advSuite, callID string) ([]byte, []string) {
			env := advEnvelope(callID, `{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}`)
			env["params"].(map[string]any)["name"] = "broadcast_get"
			return mustJSON(env), nil
		}), want: advAnswer{RPC: -32602}, rowCode: "BAD_REQUEST"},
		{class: "agentcore/forged-mcpfn-token", run: ac(acDelete, withMcpfn(`{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}`, func(t *testing.T, s *advSuite, requestID string) string {
			sg := calltoken.NewSigner(calltoken.SignerInterceptor)
			ring, err := calltoken.KeyringFromSecrets([]byte(strings.Repeat("not the function's key ", 3)))
			if err != nil {
				t.Fatal(err)
			}
			sg.Add("broadcast_delete", "BroadcastDeleteFunction", ring, nil)
			return string(mustJSON(map[string]string{"callToken": s.callToken(t, sg, calltoken.Call{Tool: "broadcast_delete", CallID: requestID + ":1", Args: []byte(`{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}`)})}))
		}), nil), want: reason(calltoken.ReasonUnknownKey), rowCode: "UNAUTHORIZED"},
		{class: "agentcore/mcpfn-token-of-other-arguments", run: ac(acDelete, withMcpfn(`{"id":"CCCCCCCCCCCCCCCCCCCCCCCCCC"}`, func(t *testing.T, s *advSuite, requestID string) string {
			return string(mustJSON(map[string]string{"callToken": interceptorToken(t, s, requestID, `{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}`)}))
		}), nil), want: reason(calltoken.ReasonArguments), rowCode: "UNAUTHORIZED"},
		{class: "agentcore/mcpfn-token-of-the-gateway", run: ac(acDelete, withMcpfn(`{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}`, func(t *testing.T, s *advSuite, requestID string) string {
			return string(mustJSON(map[string]string{"callToken": s.deleteToken(t, requestID+":1", `{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}`)}))
		}), nil), want: reason(calltoken.ReasonSigner), rowCode: "UNAUTHORIZED"},
		{class: "envelope/token-of-the-interceptor", run: inv(signedEnv(`{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}`, func(t *testing.T, s *advSuite, callID string) string {
			return s.callToken(t, s.signer(t, calltoken.SignerInterceptor, "broadcast_delete", "broadcast_delete", "BroadcastDeleteFunction"),
				calltoken.Call{Tool: "broadcast_delete", CallID: callID, Args: []byte(`{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}`)})
		})), want: reason(calltoken.ReasonSigner), rowCode: "UNAUTHORIZED"},
		{class: "agentcore/mcpfn-escaped-name", run: ac(acDelete, func(t *testing.T, s *advSuite, requestID string) (string, []string) {
			return `{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA","\u005fmcpfn":{"callToken":"junk.junk.junk"}}`, nil
		}, nil), want: reason(calltoken.ReasonMalformed), rowCode: "UNAUTHORIZED"},
		{class: "agentcore/mcpfn-string", run: ac(acDelete, literal(`{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA","_mcpfn":"`+s.jwt+`"}`), nil), want: advAnswer{Tool: "BAD_REQUEST"}, rowCode: "BAD_REQUEST"},
		{class: "agentcore/mcpfn-token-number", run: ac(acDelete, literal(`{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA","_mcpfn":{"callToken":5}}`), nil), want: advAnswer{Tool: "BAD_REQUEST"}, rowCode: "BAD_REQUEST"},
		{class: "agentcore/mcpfn-empty", run: ac(acDelete, literal(`{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA","_mcpfn":{}}`), nil), want: advAnswer{Tool: "BAD_REQUEST"}, rowCode: "BAD_REQUEST"},
		{class: "agentcore/no-token", run: ac(acDelete, literal(`{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}`), nil), want: advAnswer{Tool: "UNAUTHORIZED"}, rowCode: "UNAUTHORIZED"},
		{class: "agentcore/secret-in-client-context", run: ac(acDelete, literal(`{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}`), map[string]string{
			"bedrockAgentCorePropagatedHeaders": string(mustJSON(map[string]string{"authorization": s.secret, "x-api-key": s.jwt})),
		}), want: advAnswer{Tool: "UNAUTHORIZED"}, rowCode: "UNAUTHORIZED"},
		{class: "agentcore/secret-request-id", run: func(t *testing.T, s *advSuite) (advAnswer, []string) {
			core := strings.TrimPrefix(s.secret, "Bearer ")
			cc := agentCoreContext("broadcast-delete___broadcast_delete", s.secret, map[string]string{"bedrockAgentCoreMcpMessageId": core,
				"bedrockAgentCoreGatewayId": core, "bedrockAgentCoreTargetId": s.jwt})
			return invokeHTTP(t, "BroadcastDeleteFunction", []byte(`{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}`), cc), nil
		}, want: advAnswer{Tool: "UNAUTHORIZED"}, rowCode: "UNAUTHORIZED"},
		{class: "agentcore/payload-not-object", run: ac(acDelete, literal(`[1,2,3]`), nil), want: advAnswer{Tool: "VALIDATION_ERROR"}, rowCode: "VALIDATION_ERROR"},
		{class: "agentcore-front/token-none", run: func(t *testing.T, s *advSuite) (advAnswer, []string) {
			return s.front(t, frontCall("broadcast-get___broadcast_get", `{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}`), noHeader("Authorization")), nil
		}, want: advAnswer{Status: 401, RPC: -32001}},
		{class: "agentcore-front/token-expired", run: func(t *testing.T, s *advSuite) (advAnswer, []string) {
			tok, _ := stack.MintToken(map[string]any{"sub": s.subject, "exp": time.Now().Add(-time.Hour).Unix(), "iat": time.Now().Add(-2 * time.Hour).Unix()})
			return s.front(t, frontCall("broadcast-get___broadcast_get", `{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}`), header("Authorization", "Bearer "+tok)), nil
		}, want: advAnswer{Status: 401, RPC: -32001}},
		{class: "agentcore-front/client-mcpfn-removed", run: func(t *testing.T, s *advSuite) (advAnswer, []string) {
			return s.front(t, frontCall("broadcast-get___broadcast_get", `{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA","_mcpfn":{"callToken":"`+s.jwt+`"}}`)), nil
		}, want: advAnswer{Tool: "NOT_FOUND"}, rowCode: "NOT_FOUND", check: func(t *testing.T, s *advSuite, _ advAnswer, rows []advRow) {
			if len(rows) != 1 || rows[0].CallerSubject != s.subject || rows[0].Source != "agentcore" {
				t.Errorf("rows %+v: want one agentcore row naming %s", rows, s.subject)
			}
		}},
		{class: "agentcore-front/body-not-json", run: func(t *testing.T, s *advSuite) (advAnswer, []string) {
			return s.front(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":`), nil
		}, want: advAnswer{Status: 400, RPC: -32600}},
		{class: "agentcore-front/body-5MB", run: func(t *testing.T, s *advSuite) (advAnswer, []string) {
			return s.front(t, frontCall("broadcast-create___broadcast_create", `{"channel":"adv","text":"`+strings.Repeat("x", 5<<20)+`"}`)), nil
		}, want: advAnswer{Status: 413}},
		{class: "agentcore-front/missing-scope", run: func(t *testing.T, s *advSuite) (advAnswer, []string) {
			tok, _ := stack.MintToken(map[string]any{"sub": s.subject, "scope": "broadcasts:read"})
			return s.front(t, frontCall("broadcast-delete___broadcast_delete", `{"id":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}`), header("Authorization", "Bearer "+tok)), nil
		}, want: advAnswer{Tool: "FORBIDDEN"}},
	}
}
