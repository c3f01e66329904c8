package samtemplate_test

import (
	"fmt"

	"github.com/mcpfn/mcpfn/internal/samtemplate"
)

// Short-form tags arrive in their long form, and resolve against the names a
// local run gave its resources.
func ExampleTemplate_FunctionEnvironment() {
	tpl, err := samtemplate.Parse([]byte(`
Transform: AWS::Serverless-2016-10-31
Globals:
  Function:
    Environment:
      Variables:
        MCPFN_AUDIT_TABLE: !Ref AuditTable
Resources:
  AuditTable:
    Type: AWS::DynamoDB::Table
    Properties: {}
  Tool:
    Type: AWS::Serverless::Function
    Properties:
      Environment:
        Variables:
          REGION_URL: !Sub "https://dynamodb.${AWS::Region}.amazonaws.com"
`))
	if err != nil {
		panic(err)
	}
	raw := tpl.Globals["Function"].(map[string]any)["Environment"].(map[string]any)["Variables"]
	fmt.Println(raw)

	env, err := tpl.FunctionEnvironment("Tool", samtemplate.Values{Refs: map[string]string{"AuditTable": "audit-local"}})
	if err != nil {
		panic(err)
	}
	fmt.Println(env["MCPFN_AUDIT_TABLE"], env["REGION_URL"])
	// Output:
	// map[MCPFN_AUDIT_TABLE:map[Ref:AuditTable]]
	// audit-local https://dynamodb.us-east-1.amazonaws.com
}
