package localtest_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/smithy-go"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/localtest"
)

// The attacks of issue 20 as a compromised tool function makes them: with
// its own role's credentials (as Lambda hands them to it), through the
// stack's endpoints, with the AWS SDK. Each is refused by IAM — the
// template's policies as the stack enforces them — with AWS's
// AccessDeniedException, while the same call on what the role does own
// goes through (so the refusal is the policy's, not luck).

const attacker = "BroadcastGetFunction"

func attackerCreds(t *testing.T) aws.Credentials {
	t.Helper()
	c, ok := stack.FunctionCredentials(attacker)
	if !ok {
		t.Fatalf("no credentials for %s", attacker)
	}
	return c
}

// wantAccessDenied requires err to be AWS's AccessDeniedException whose
// message names the caller's role session and the action.
func wantAccessDenied(t *testing.T, what string, err error, action string) {
	t.Helper()
	var api smithy.APIError
	if !errors.As(err, &api) || api.ErrorCode() != "AccessDeniedException" {
		t.Fatalf("%s: got %v, want AccessDeniedException", what, err)
	}
	msg := api.ErrorMessage()
	if !strings.HasPrefix(msg, "User: arn:aws:") || !strings.Contains(msg, "is not authorized to perform: "+action) {
		t.Fatalf("%s: message %q does not say who may not do %s", what, msg, action)
	}
}

func TestACompromisedFunctionCannotWriteAnotherToolsAuditRow(t *testing.T) {
	ddb := stack.DynamoDBAs(attackerCreds(t))
	item := func(key string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"rowKey": &types.AttributeValueMemberS{Value: key}, "tool": &types.AttributeValueMemberS{Value: "forged"}}
	}
	table := aws.String(stack.AuditTable())
	for _, key := range []string{"broadcast_delete#" + unique("forged"), "gateway#" + unique("forged"), "broadcast_get"} {
		_, err := ddb.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: table, Item: item(key)})
		wantAccessDenied(t, "PutItem "+key, err, "dynamodb:PutItem")
		_, err = ddb.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{TableName: table,
			Key:              map[string]types.AttributeValue{"rowKey": &types.AttributeValueMemberS{Value: key}},
			UpdateExpression: aws.String("SET tool = :t"), ExpressionAttributeValues: map[string]types.AttributeValue{":t": &types.AttributeValueMemberS{Value: "x"}}})
		wantAccessDenied(t, "UpdateItem "+key, err, "dynamodb:UpdateItem")
	}
	// Nor read, list or delete any row.
	_, err := ddb.Scan(t.Context(), &dynamodb.ScanInput{TableName: table})
	wantAccessDenied(t, "Scan", err, "dynamodb:Scan")
	_, err = ddb.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: table, Key: map[string]types.AttributeValue{"rowKey": &types.AttributeValueMemberS{Value: "broadcast_get#x"}}})
	wantAccessDenied(t, "GetItem", err, "dynamodb:GetItem")
	_, err = ddb.DeleteItem(t.Context(), &dynamodb.DeleteItemInput{TableName: table, Key: map[string]types.AttributeValue{"rowKey": &types.AttributeValueMemberS{Value: "broadcast_get#x"}}})
	wantAccessDenied(t, "DeleteItem", err, "dynamodb:DeleteItem")

	// Its own rows it writes (LeadingKeys "broadcast_get#*").
	own := "broadcast_get#" + unique("own")
	if _, err := ddb.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: table, Item: item(own)}); err != nil {
		t.Fatalf("its own row: %v", err)
	}
	_, _ = stack.DynamoDB().DeleteItem(t.Context(), &dynamodb.DeleteItemInput{TableName: table, Key: map[string]types.AttributeValue{"rowKey": &types.AttributeValueMemberS{Value: own}}})
}

func TestACompromisedFunctionCannotReadAnotherFunctionsCallKey(t *testing.T) {
	sm := stack.SecretsManagerAs(attackerCreds(t))
	other := stack.KeySecret("BroadcastDeleteFunction")
	_, err := sm.GetSecretValue(t.Context(), &secretsmanager.GetSecretValueInput{SecretId: aws.String(other)})
	wantAccessDenied(t, "GetSecretValue of another function's key", err, "secretsmanager:GetSecretValue")
	// By name instead of ARN, and its previous version: the same secret.
	name := other[strings.LastIndex(other, ":")+1:]
	_, err = sm.GetSecretValue(t.Context(), &secretsmanager.GetSecretValueInput{SecretId: aws.String(name), VersionStage: aws.String("AWSPREVIOUS")})
	wantAccessDenied(t, "GetSecretValue by name", err, "secretsmanager:GetSecretValue")
	// Nor rotate it (to a key it knows).
	_, err = sm.PutSecretValue(t.Context(), &secretsmanager.PutSecretValueInput{SecretId: aws.String(other), SecretString: aws.String("attacker-chosen")})
	wantAccessDenied(t, "PutSecretValue of another function's key", err, "secretsmanager:PutSecretValue")

	// The key's resource policy denies even the account's administrator:
	// only the function and its signers read it.
	_, err = stack.SecretsManager().GetSecretValue(t.Context(), &secretsmanager.GetSecretValueInput{SecretId: aws.String(other)})
	wantAccessDenied(t, "the operator's GetSecretValue", err, "secretsmanager:GetSecretValue")
	var api smithy.APIError
	if errors.As(err, &api) && !strings.Contains(api.ErrorMessage(), "explicit deny in a resource-based policy") {
		t.Fatalf("the operator was refused for another reason: %s", api.ErrorMessage())
	}

	// Its own key it reads.
	if _, err := sm.GetSecretValue(t.Context(), &secretsmanager.GetSecretValueInput{SecretId: aws.String(stack.KeySecret(attacker))}); err != nil {
		t.Fatalf("its own key: %v", err)
	}
}

func TestACompromisedFunctionCannotInvokeFunctions(t *testing.T) {
	client := lambda.New(lambda.Options{Region: "us-east-1", BaseEndpoint: aws.String(stack.InvokeURL()),
		Credentials: credentials.StaticCredentialsProvider{Value: attackerCreds(t)}})
	before := stack.Invocations("BroadcastDeleteFunction")
	for _, fn := range []string{"BroadcastDeleteFunction", "BroadcastGetFunction", "AgentCoreInterceptorFunction", "arn:aws:lambda:us-east-1:000000000000:function:BroadcastCreateFunction"} {
		_, err := client.Invoke(t.Context(), &lambda.InvokeInput{FunctionName: aws.String(fn), Payload: []byte(`{}`)})
		wantAccessDenied(t, "Invoke "+fn, err, "lambda:InvokeFunction")
		_, err = client.Invoke(t.Context(), &lambda.InvokeInput{FunctionName: aws.String(fn), Payload: []byte(`{}`), InvocationType: "Event"})
		wantAccessDenied(t, "Event invoke "+fn, err, "lambda:InvokeFunction")
	}
	if after := stack.Invocations("BroadcastDeleteFunction"); after != before {
		t.Fatalf("a refused invoke reached the function")
	}
}

func TestACompromisedFunctionCannotWriteTasksOutsideItsRole(t *testing.T) {
	ddb := stack.DynamoDBAs(attackerCreds(t))
	table := aws.String(stack.Table("TasksTable"))
	// A new task record or a cancel marker needs PutItem, which only the
	// gateway's role has; nor may UpdateItem (which creates a missing
	// item) touch either: tasks_iam_test.go.
	for _, key := range []string{unique("task"), "cancel#" + unique("call")} {
		_, err := ddb.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: table, Item: map[string]types.AttributeValue{
			"taskId": &types.AttributeValueMemberS{Value: key}, "expiresAt": &types.AttributeValueMemberN{Value: fmt.Sprint(time.Now().Add(time.Hour).Unix())}}})
		wantAccessDenied(t, "PutItem "+key, err, "dynamodb:PutItem")
	}
	_, err := ddb.DeleteItem(t.Context(), &dynamodb.DeleteItemInput{TableName: table, Key: map[string]types.AttributeValue{"taskId": &types.AttributeValueMemberS{Value: "any"}}})
	wantAccessDenied(t, "DeleteItem", err, "dynamodb:DeleteItem")
	_, err = ddb.Scan(t.Context(), &dynamodb.ScanInput{TableName: table})
	wantAccessDenied(t, "Scan (list every caller's tasks)", err, "dynamodb:Scan")
	// Nor the data of other tools: broadcast_get reads broadcasts, it
	// neither writes nor deletes them.
	_, err = ddb.DeleteItem(t.Context(), &dynamodb.DeleteItemInput{TableName: aws.String(stack.Table("BroadcastsTable")), Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "any"}}})
	wantAccessDenied(t, "DeleteItem of a broadcast", err, "dynamodb:DeleteItem")
}

// TestForgedSignaturesAreRefused: a function that knows another role's key
// id but not its secret, or makes a key up, is refused before any policy is
// read.
func TestForgedSignaturesAreRefused(t *testing.T) {
	victim, _ := stack.FunctionCredentials("BroadcastDeleteFunction")
	own := attackerCreds(t)
	forged := aws.Credentials{AccessKeyID: victim.AccessKeyID, SecretAccessKey: own.SecretAccessKey, SessionToken: victim.SessionToken}
	for _, c := range []struct {
		creds aws.Credentials
		code  string
	}{
		{forged, "InvalidSignatureException"},
		{aws.Credentials{AccessKeyID: "ASIAMADEUP", SecretAccessKey: "x"}, "UnrecognizedClientException"},
		{aws.Credentials{AccessKeyID: victim.AccessKeyID, SecretAccessKey: victim.SecretAccessKey}, "UnrecognizedClientException"}, // no session token
	} {
		_, err := stack.DynamoDBAs(c.creds).GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(stack.Table("BroadcastsTable")),
			Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "x"}}})
		var api smithy.APIError
		if !errors.As(err, &api) || api.ErrorCode() != c.code {
			t.Errorf("DynamoDB with %s: %v, want %s", c.creds.AccessKeyID, err, c.code)
		}
		_, err = stack.SecretsManagerAs(c.creds).GetSecretValue(t.Context(), &secretsmanager.GetSecretValueInput{SecretId: aws.String(stack.KeySecret("BroadcastDeleteFunction"))})
		if !errors.As(err, &api) || api.ErrorCode() != c.code {
			t.Errorf("Secrets Manager with %s: %v, want %s", c.creds.AccessKeyID, err, c.code)
		}
	}
}

// TestARemovedGrantIsTheCallRefused runs the stack with a copy of
// template.yaml from which one grant the demo needs is gone —
// broadcast_get's dynamodb:GetItem on BroadcastsTable — and sees exactly
// that call refused: the tool's call fails, its audit row and the stack's
// IAM log say AccessDenied, and nothing else was refused.
func TestARemovedGrantIsTheCallRefused(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// Other tools have the same grant: this one is in broadcast_get's
	// region.
	grant := "            - Effect: Allow\n              Action: dynamodb:GetItem\n              Resource: !GetAtt BroadcastsTable.Arn\n"
	before, region, ok := strings.Cut(string(src), "# >>> mcpfn tool broadcast_get:")
	region, after, ok2 := strings.Cut(region, "# <<< mcpfn tool broadcast_get")
	if !ok || !ok2 || strings.Count(region, grant) != 1 {
		t.Fatalf("template.yaml no longer has broadcast_get's grant as this test knows it:\n%s", grant)
	}
	edited := before + "# >>> mcpfn tool broadcast_get:" + strings.Replace(region, grant, "", 1) + "# <<< mcpfn tool broadcast_get" + after
	dir := t.TempDir()
	copyPath := filepath.Join(dir, "template.yaml")
	if err := os.WriteFile(copyPath, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(filepath.Join(dir, "stack"))
	cfg.DynamoDBEndpoint = stack.DynamoDBEndpoint()
	cfg.PoolSize = 1
	cfg.ExtraFunctions, cfg.ExtraTools = nil, nil
	cfg.IAMTemplate = copyPath
	st, err := localtest.Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })

	cs := connectTo(t, st)
	created, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "broadcast_create", Arguments: map[string]any{"channel": "iam", "text": "hello"}})
	if err != nil || created.IsError {
		t.Fatalf("broadcast_create (its grants are intact): %v %+v", err, created)
	}
	id := created.StructuredContent.(map[string]any)["id"].(string)
	got, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "broadcast_get", Arguments: map[string]any{"id": id}})
	if err != nil {
		t.Fatal(err)
	}
	if !got.IsError {
		t.Fatalf("broadcast_get without its grant answered %+v", got.StructuredContent)
	}

	// The stack's IAM log: exactly that call, and nothing else.
	if err := st.Settle(t.Context()); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(st.IAMLogPath())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var denials []map[string]string
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var d map[string]string
		if json.Unmarshal(sc.Bytes(), &d) == nil {
			denials = append(denials, d)
		}
	}
	wantResource := "arn:aws:dynamodb:us-east-1:000000000000:table/" + st.Table("BroadcastsTable")
	if len(denials) == 0 {
		t.Fatal("nothing was refused")
	}
	for _, d := range denials {
		if d["principal"] != "BroadcastGetFunction" || d["action"] != "dynamodb:GetItem" || d["resource"] != wantResource {
			t.Errorf("refused besides the removed grant's call: %v", d)
		}
	}
	// The call's audit row says why.
	rows, _, err := audit.New(audit.Config{Table: st.AuditTable(), Client: st.DynamoDB()}).RecentRows(t.Context(), audit.QueryOptions{Since: time.Now().Add(-time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range rows {
		if r.Tool == "broadcast_get" && !r.OK {
			found = true
			if b, _ := json.Marshal(r); !strings.Contains(string(b), "AccessDenied") {
				t.Errorf("broadcast_get's row does not say AccessDenied: %s", b)
			}
		}
	}
	if !found {
		t.Fatalf("no failed broadcast_get row among %d", len(rows))
	}
}
