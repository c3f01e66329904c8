package samtemplate_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mcpfn/mcpfn/internal/samtemplate"
)

const shortForms = `
AWSTemplateFormatVersion: 2010-09-09
Transform: AWS::Serverless-2016-10-31
Parameters:
  Reads:
    Type: Number
    Default: "5"
  Stage:
    Type: String
Resources:
  Fn:
    Type: AWS::Serverless::Function
    DependsOn: [Data]
    Properties:
      Environment:
        Variables:
          TABLE: !Ref Data
          ARN: !GetAtt Data.Arn
          ARN_SEQ: !GetAtt [Data, StreamArn]
          URL: !Sub "https://${AWS::Region}.example/${Stage}"
          JOINED: !Join ["-", [!Ref Stage, !Select [0, !Split [",", "a,b"]]]]
          CHOICE: !If [IsProd, !Ref Stage, !Ref "AWS::NoValue"]
          ANCHORED: &anchor plain
          ALIASED: *anchor
          NUMBER: 12
          QUOTED: "12"
  Data:
    Type: AWS::DynamoDB::Table
    Properties:
      TableName: !Sub "${AWS::StackName}-data"
      BillingMode: PROVISIONED
      ProvisionedThroughput:
        ReadCapacityUnits: !Ref Reads
        WriteCapacityUnits: 2
      AttributeDefinitions:
        - {AttributeName: pk, AttributeType: S}
        - {AttributeName: sk, AttributeType: N}
        - {AttributeName: lsk, AttributeType: S}
      KeySchema:
        - {AttributeName: pk, KeyType: HASH}
        - {AttributeName: sk, KeyType: RANGE}
      LocalSecondaryIndexes:
        - IndexName: byLsk
          KeySchema:
            - {AttributeName: pk, KeyType: HASH}
            - {AttributeName: lsk, KeyType: RANGE}
          Projection:
            ProjectionType: INCLUDE
            NonKeyAttributes: [a, b]
      StreamSpecification:
        StreamViewType: NEW_AND_OLD_IMAGES
      TimeToLiveSpecification:
        AttributeName: gone
        Enabled: false
  Simple:
    Type: AWS::Serverless::SimpleTable
    Properties:
      PrimaryKey: {Name: key, Type: Number}
  Bad:
    Type: AWS::DynamoDB::Table
    Properties:
      BillingMode: PAY_PER_REQUEST
      KeySchema:
        - {AttributeName: !Sub "${Stage}", KeyType: HASH}
`

func TestShortFormTagsBecomeLongForm(t *testing.T) {
	tpl, err := samtemplate.Parse([]byte(shortForms))
	if err != nil {
		t.Fatal(err)
	}
	fns := tpl.Resources("AWS::Serverless::Function")
	if len(fns) != 1 {
		t.Fatalf("Resources(function) = %v", fns)
	}
	vars := fns["Fn"].Properties["Environment"].(map[string]any)["Variables"].(map[string]any)
	want := map[string]any{
		"TABLE":   map[string]any{"Ref": "Data"},
		"ARN":     map[string]any{"Fn::GetAtt": []any{"Data", "Arn"}},
		"ARN_SEQ": map[string]any{"Fn::GetAtt": []any{"Data", "StreamArn"}},
		"URL":     map[string]any{"Fn::Sub": "https://${AWS::Region}.example/${Stage}"},
		"JOINED": map[string]any{"Fn::Join": []any{"-", []any{
			map[string]any{"Ref": "Stage"},
			map[string]any{"Fn::Select": []any{0, map[string]any{"Fn::Split": []any{",", "a,b"}}}},
		}}},
		"CHOICE":   map[string]any{"Fn::If": []any{"IsProd", map[string]any{"Ref": "Stage"}, map[string]any{"Ref": "AWS::NoValue"}}},
		"ANCHORED": "plain",
		"ALIASED":  "plain",
		"NUMBER":   12,
		"QUOTED":   "12",
	}
	if !reflect.DeepEqual(vars, want) {
		t.Errorf("variables =\n%#v\nwant\n%#v", vars, want)
	}
	if fn, arg, ok := samtemplate.Intrinsic(vars["TABLE"]); !ok || fn != "Ref" || arg != "Data" {
		t.Errorf("Intrinsic(TABLE) = %q %v %v", fn, arg, ok)
	}
	if _, _, ok := samtemplate.Intrinsic(vars["NUMBER"]); ok {
		t.Error("Intrinsic(12) reported an intrinsic")
	}
	if got := fns["Fn"].Attributes["DependsOn"]; !reflect.DeepEqual(got, []any{"Data"}) {
		t.Errorf("DependsOn = %v", got)
	}
	if tpl.Transform != "AWS::Serverless-2016-10-31" {
		t.Errorf("Transform = %v", tpl.Transform)
	}
	if ids := tpl.LogicalIDs("AWS::DynamoDB::Table"); !reflect.DeepEqual(ids, []string{"Bad", "Data"}) {
		t.Errorf("LogicalIDs(table) = %v", ids)
	}
}

func TestTableInputProvisionedWithLSIAndStream(t *testing.T) {
	tpl, err := samtemplate.Parse([]byte(shortForms))
	if err != nil {
		t.Fatal(err)
	}
	in, err := tpl.TableInput("Data", "local-data")
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(in.TableName) != "local-data" || in.BillingMode != types.BillingModeProvisioned {
		t.Errorf("name %q billing %q", aws.ToString(in.TableName), in.BillingMode)
	}
	if pt := in.ProvisionedThroughput; pt == nil || aws.ToInt64(pt.ReadCapacityUnits) != 5 || aws.ToInt64(pt.WriteCapacityUnits) != 2 {
		t.Errorf("throughput = %+v, want 5/2 (Ref to the parameter's quoted Default)", pt)
	}
	if len(in.KeySchema) != 2 || in.KeySchema[1].KeyType != types.KeyTypeRange || len(in.AttributeDefinitions) != 3 ||
		in.AttributeDefinitions[1].AttributeType != types.ScalarAttributeTypeN {
		t.Errorf("keys %+v attributes %+v", in.KeySchema, in.AttributeDefinitions)
	}
	if len(in.LocalSecondaryIndexes) != 1 {
		t.Fatalf("LSIs = %+v", in.LocalSecondaryIndexes)
	}
	lsi := in.LocalSecondaryIndexes[0]
	if aws.ToString(lsi.IndexName) != "byLsk" || lsi.Projection.ProjectionType != types.ProjectionTypeInclude ||
		!reflect.DeepEqual(lsi.Projection.NonKeyAttributes, []string{"a", "b"}) {
		t.Errorf("LSI = %+v projection %+v", lsi, lsi.Projection)
	}
	if s := in.StreamSpecification; s == nil || !aws.ToBool(s.StreamEnabled) || s.StreamViewType != types.StreamViewTypeNewAndOldImages {
		t.Errorf("stream = %+v", s)
	}
	if got := tpl.TTLAttribute("Data"); got != "" {
		t.Errorf("TTLAttribute of a disabled TTL = %q, want empty", got)
	}

	simple, err := tpl.TableInput("Simple", "s")
	if err != nil {
		t.Fatal(err)
	}
	if simple.BillingMode != types.BillingModePayPerRequest || aws.ToString(simple.KeySchema[0].AttributeName) != "key" ||
		simple.AttributeDefinitions[0].AttributeType != types.ScalarAttributeTypeN {
		t.Errorf("SimpleTable = %+v", simple)
	}
}

func TestTableInputErrors(t *testing.T) {
	tpl, err := samtemplate.Parse([]byte(shortForms))
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{
		"Missing": "no resource Missing",
		"Fn":      "not a AWS::DynamoDB::Table",
		"Bad":     "KeySchema[0].AttributeName: want a string",
	} {
		if _, err := tpl.TableInput(id, "x"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("TableInput(%s) error = %v, want it to mention %q", id, err, want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for name, doc := range map[string]string{
		"empty":        "",
		"not a map":    "- a\n- b\n",
		"no resources": "Parameters: {}\n",
		"no type":      "Resources:\n  A:\n    Properties: {}\n",
		"bad yaml":     "Resources: [\n",
	} {
		if _, err := samtemplate.Parse([]byte(doc)); err == nil {
			t.Errorf("%s: Parse succeeded", name)
		}
	}
	if _, err := samtemplate.Load("does-not-exist.yaml"); err == nil {
		t.Error("Load of a missing file succeeded")
	}
}

// Nested aliases must fail on the depth or size bound, not hang or exhaust
// memory.
func TestAliasExpansionBounded(t *testing.T) {
	var deep strings.Builder
	deep.WriteString("a0: &a0 [x]\n")
	for i := 1; i <= 120; i++ {
		fmt.Fprintf(&deep, "a%d: &a%d [*a%d]\n", i, i, i-1)
	}
	deep.WriteString("Resources: {}\n")
	if _, err := samtemplate.Parse([]byte(deep.String())); err == nil || !strings.Contains(err.Error(), "deeper") {
		t.Errorf("Parse of deeply nested aliases: %v", err)
	}

	var wide strings.Builder
	wide.WriteString("l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&wide, "l%d: &l%d [*l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	wide.WriteString("Resources: {}\n")
	if _, err := samtemplate.Parse([]byte(wide.String())); err == nil || !strings.Contains(err.Error(), "alias expansion") {
		t.Errorf("Parse of a billion laughs: %v", err)
	}
}
