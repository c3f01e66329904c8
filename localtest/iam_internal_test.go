package localtest

import (
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/internal/samiam"
	"github.com/mcpfn/mcpfn/internal/samtemplate"
)

// TestWhatTheStackCannotEvaluateStopsItNamed: a grant of an operation the
// stack does not authorize, or a condition key it does not derive, is an
// error naming it — the stack does not start rather than enforce less.
func TestWhatTheStackCannotEvaluateStopsItNamed(t *testing.T) {
	src := `Resources:
  F:
    Type: AWS::Serverless::Function
    Properties:
      Policies:
        - Statement:
            - Effect: Allow
              Action: [dynamodb:BatchWriteItem, dynamodb:GetItem, dynamodb:Get*]
              Resource: "*"
            - Effect: Allow
              Action: secretsmanager:GetSecretValue
              Resource: "*"
              Condition:
                StringEquals:
                  aws:SourceVpc: vpc-1
`
	tmpl, err := samtemplate.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	m, err := samiam.Derive(tmpl, samiam.LocalValues(tmpl, localAccount, localRegion, nil), localAccount)
	if err != nil {
		t.Fatal(err)
	}
	err = checkEvaluable(m)
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{"dynamodb:BatchWriteItem", "aws:sourcevpc"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v does not name %s", err, want)
		}
	}
	if strings.Contains(err.Error(), "grants dynamodb:GetItem") || strings.Contains(err.Error(), "grants dynamodb:Get*") {
		t.Errorf("%v names what it can evaluate", err)
	}
}
