package localtest_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// TestDynamoDBAndSecretsRefuseBrowsersAndForeignHosts (issue 20, L4): the
// stack's DynamoDB endpoint and its Secrets Manager stand-in (the tables
// and the call keys) refuse, before reading a request, what a web page in
// the developer's browser can send to their loopback ports: a foreign Host
// (DNS rebinding) and browser requests (Origin, Sec-Fetch-Site). Loopback
// names and the configured hosts go on to the signature check; the SDK, as
// the operator, is served.
func TestDynamoDBAndSecretsRefuseBrowsersAndForeignHosts(t *testing.T) {
	for _, ep := range []struct{ name, url, target, body string }{
		{"DynamoDB", stack.DynamoDBEndpoint(), "DynamoDB_20120810.Scan", `{"TableName":"` + stack.AuditTable() + `"}`},
		{"Secrets Manager", stack.SecretsURL(), "secretsmanager.GetSecretValue", `{"SecretId":"BroadcastGetFunctionCallKey"}`},
	} {
		u, _ := url.Parse(ep.url)
		port := u.Port()
		for _, c := range []struct {
			name    string
			host    string
			header  map[string]string
			refused bool
		}{
			{"loopback address", "127.0.0.1:" + port, nil, false},
			{"localhost", "localhost:" + port, nil, false},
			{"configured host", "invoke.mcpfn.test:" + port, nil, false},
			{"rebound host", "evil.example:" + port, nil, true},
			{"origin", "127.0.0.1:" + port, map[string]string{"Origin": "https://evil.example"}, true},
			{"cross-site", "127.0.0.1:" + port, map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"}, true},
			{"another local port", "localhost:" + port, map[string]string{"Sec-Fetch-Site": "same-site"}, true},
		} {
			req, _ := http.NewRequest(http.MethodPost, ep.url+"/", strings.NewReader(ep.body))
			req.Host = c.host
			req.Header.Set("Content-Type", "application/x-amz-json-1.0")
			req.Header.Set("X-Amz-Target", ep.target)
			for k, v := range c.header {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body := string(b)
			refusedHere := resp.StatusCode == http.StatusForbidden && strings.Contains(body, "AccessDeniedException") && strings.Contains(body, "not served by the local stack")
			switch {
			case c.refused && !refusedHere:
				t.Errorf("%s, %s: %d %s, want 403 AccessDeniedException before anything is read", ep.name, c.name, resp.StatusCode, body)
			case !c.refused && (refusedHere || !strings.Contains(body, "MissingAuthenticationToken")):
				t.Errorf("%s, %s: %d %s, want the signature check's refusal of an unsigned request", ep.name, c.name, resp.StatusCode, body)
			}
		}
	}
	// The SDK as the operator.
	if _, err := stack.DynamoDB().DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(stack.AuditTable())}); err != nil {
		t.Errorf("the operator's DescribeTable: %v", err)
	}
}
