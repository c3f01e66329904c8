package samtemplate_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/internal/samtemplate"
)

const withGlobals = `
Transform: AWS::Serverless-2016-10-31
Parameters:
  Days: {Type: Number, Default: 30}
  Stage: {Type: String, Default: dev}
Conditions:
  IsProd: !Equals [!Ref Stage, prod]
Globals:
  Function:
    Environment:
      Variables:
        AUDIT_TABLE: !Ref Audit
        DAYS: !Ref Days
        OVERRIDDEN: global
Resources:
  Audit: {Type: AWS::DynamoDB::Table, Properties: {}}
  Data: {Type: AWS::DynamoDB::Table, Properties: {}}
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      Environment:
        Variables:
          OVERRIDDEN: own
          DATA_ARN: !GetAtt Data.Arn
          URL: !Sub "https://${AWS::Region}.example/${Stage}/${Data.Arn}/${!Literal}"
          SUB_MAP: !Sub ["${A}-${B}", {A: !Ref Stage, B: x}]
          JOINED: !Join ["-", [!Ref Stage, !Select [1, !Split [",", "a,b,c"]], 7]]
          CHOSEN: !If [IsProd, prod-only, !Ref Stage]
          DROPPED: !If [IsProd, yes, !Ref AWS::NoValue]
          BOOL: true
  Broken:
    Type: AWS::Serverless::Function
    Properties:
      Environment:
        Variables:
          MISSING: !Ref Nowhere
`

func TestFunctionEnvironment(t *testing.T) {
	tpl, err := samtemplate.Parse([]byte(withGlobals))
	if err != nil {
		t.Fatal(err)
	}
	vals := samtemplate.Values{
		Refs:  map[string]string{"Audit": "audit-local", "IsProd": "false"},
		Attrs: map[string]string{"Data.Arn": "arn:aws:dynamodb:us-east-1:123456789012:table/data-local"},
	}
	env, err := tpl.FunctionEnvironment("Fn", vals)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"AUDIT_TABLE": "audit-local",
		"DAYS":        "30",
		"OVERRIDDEN":  "own",
		"DATA_ARN":    "arn:aws:dynamodb:us-east-1:123456789012:table/data-local",
		"URL":         "https://us-east-1.example/dev/arn:aws:dynamodb:us-east-1:123456789012:table/data-local/${Literal}",
		"SUB_MAP":     "dev-x",
		"JOINED":      "dev-b-7",
		"CHOSEN":      "dev",
		"BOOL":        "true",
	}
	if !reflect.DeepEqual(env, want) {
		t.Errorf("environment =\n%v\nwant\n%v", env, want)
	}

	// Refs override parameter defaults and pseudo parameters.
	vals.Refs["Stage"] = "test"
	vals.Refs["AWS::Region"] = "eu-west-1"
	vals.Refs["IsProd"] = "true"
	env, err = tpl.FunctionEnvironment("Fn", vals)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(env["URL"], "https://eu-west-1.example/test/") || env["CHOSEN"] != "prod-only" || env["DROPPED"] != "yes" {
		t.Errorf("with overrides: %v", env)
	}

	if _, err := tpl.FunctionEnvironment("Broken", vals); err == nil || !strings.Contains(err.Error(), "Nowhere") {
		t.Errorf("unresolvable Ref: %v", err)
	}
	if _, err := tpl.FunctionEnvironment("Fn", samtemplate.Values{}); err == nil {
		t.Error("a Ref to a resource without a local value resolved")
	}
}

func TestResolveLeavesPlainValues(t *testing.T) {
	tpl, err := samtemplate.Parse([]byte(withGlobals))
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]any{"a": []any{1, "x", map[string]any{"b": true}}, "gone": map[string]any{"Ref": "AWS::NoValue"}}
	got, err := tpl.Resolve(in, samtemplate.Values{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"a": []any{1, "x", map[string]any{"b": true}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Resolve = %v, want %v", got, want)
	}
	if _, err := tpl.Resolve(map[string]any{"Fn::ImportValue": "x"}, samtemplate.Values{}); err == nil {
		t.Error("Fn::ImportValue resolved locally")
	}
}
