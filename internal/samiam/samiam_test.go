package samiam_test

import (
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/internal/iam"
	"github.com/mcpfn/mcpfn/internal/samiam"
	"github.com/mcpfn/mcpfn/internal/samtemplate"
)

func TestTheRepositorysTemplateDerives(t *testing.T) {
	tmpl, err := samtemplate.LoadRepo()
	if err != nil {
		t.Fatal(err)
	}
	m, err := samiam.Derive(tmpl, samiam.LocalValues(tmpl, "000000000000", "us-east-1", map[string]bool{"DeployAgentCore": true}), "000000000000")
	if err != nil {
		t.Fatal(err)
	}
	for _, fn := range tmpl.LogicalIDs("AWS::Serverless::Function") {
		role := m.Roles[m.FunctionRoles[fn]]
		if role == nil {
			t.Fatalf("%s has no role", fn)
		}
		var names []string
		for _, p := range role.Policies {
			names = append(names, p.Name)
		}
		joined := strings.Join(names, ", ")
		for _, want := range []string{"AWSLambdaBasicExecutionRole", "AWSXrayWriteOnlyAccess", "inline policy 0"} {
			if !strings.Contains(joined, want) {
				t.Errorf("%s's role %s lacks %s: %s", fn, role.ARN, want, joined)
			}
		}
	}
	if r := m.Roles["AgentCoreGatewayRole"]; r == nil || len(r.Policies) != 1 {
		t.Fatalf("AgentCoreGatewayRole: %+v", r)
	}
	for _, arn := range []string{
		"arn:aws:secretsmanager:us-east-1:000000000000:secret:BroadcastGetCallKey",
		"arn:aws:lambda:us-east-1:000000000000:function:BroadcastGetFunction",
		"arn:aws:lambda:us-east-1:000000000000:function:AgentCoreInterceptorFunction",
	} {
		if m.ResourcePolicies[arn] == nil {
			t.Errorf("no resource policy for %s", arn)
		}
	}
	// The key's policy names the function's role, the gateway's and the
	// interceptor's (DeployAgentCore is true).
	key := m.ResourcePolicies["arn:aws:secretsmanager:us-east-1:000000000000:secret:BroadcastGetCallKey"]
	if vals := key.Statements[0].Conditions[0].Values; len(vals) != 3 {
		t.Fatalf("the key policy's principals: %v", vals)
	}
	// The function's resource policy: the gateway's role only (the external
	// AgentCore role's permission has a false condition), and this stack's
	// AgentCore Gateway.
	fnp := m.ResourcePolicies["arn:aws:lambda:us-east-1:000000000000:function:BroadcastGetFunction"]
	if len(fnp.Statements) != 2 {
		t.Fatalf("BroadcastGetFunction's policy: %+v", fnp.Statements)
	}
}

func TestWhatSAMAddsThatIsNotDerivedIsRefused(t *testing.T) {
	for _, c := range []struct{ props, want string }{
		{"Policies:\n        - DynamoDBCrudPolicy:\n            TableName: T", "SAM policy template DynamoDBCrudPolicy"},
		{"Policies: AmazonDynamoDBFullAccess", "managed policy AmazonDynamoDBFullAccess"},
		{"VpcConfig:\n        SubnetIds: [a]", "VpcConfig"},
		{"Role: arn:aws:iam::123456789012:role/x", "Role"},
		{"Events:\n        Q:\n          Type: SQS", "Events"},
		{"PermissionsBoundary: arn:aws:iam::123456789012:policy/b", "PermissionsBoundary"},
	} {
		src := "Resources:\n  F:\n    Type: AWS::Serverless::Function\n    Properties:\n      " + c.props + "\n"
		tmpl, err := samtemplate.Parse([]byte(src))
		if err != nil {
			t.Fatal(err)
		}
		_, err = samiam.Derive(tmpl, samiam.LocalValues(tmpl, "000000000000", "us-east-1", nil), "000000000000")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error naming %s", c.props, err, c.want)
		}
	}
}

func TestConditionsEvaluate(t *testing.T) {
	tmpl, err := samtemplate.LoadRepo()
	if err != nil {
		t.Fatal(err)
	}
	got, err := samiam.Conditions(tmpl, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !got["UseIamAuth"] || got["DeployAgentCore"] || got["HasAgentCoreGateway"] {
		t.Fatalf("defaults: %v", got)
	}
	got, err = samiam.Conditions(tmpl, map[string]string{"DeployAgentCoreGateway": "true", "AuthMode": "jwt"})
	if err != nil {
		t.Fatal(err)
	}
	if got["UseIamAuth"] || !got["DeployAgentCore"] {
		t.Fatalf("with parameters: %v", got)
	}
	_ = iam.Allow
}
