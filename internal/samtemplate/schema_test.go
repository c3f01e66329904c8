package samtemplate_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/awslabs/goformation/v7"
	"github.com/awslabs/goformation/v7/intrinsics"

	"github.com/mcpfn/mcpfn/internal/samtemplate"
)

// tablesAsCloudFormation re-encodes the template's table resources, in the
// long intrinsic form samtemplate produces, as a JSON template of their own.
func tablesAsCloudFormation(t *testing.T, tpl *samtemplate.Template) ([]byte, *intrinsics.ProcessorOptions) {
	t.Helper()
	resources := map[string]any{}
	for _, typ := range []string{samtemplate.TypeDynamoDBTable, samtemplate.TypeSimpleTable} {
		for id, r := range tpl.Resources(typ) {
			body := map[string]any{"Type": r.Type, "Properties": r.Properties}
			for k, v := range r.Attributes {
				body[k] = v
			}
			resources[id] = body
		}
	}
	data, err := json.Marshal(map[string]any{
		"AWSTemplateFormatVersion": "2010-09-09",
		"Parameters":               tpl.Parameters,
		"Resources":                resources,
	})
	if err != nil {
		t.Fatal(err)
	}
	// CloudFormation's Ref to a parameter is always a string, even for Type
	// Number; goformation would substitute the YAML number instead.
	overrides := map[string]any{}
	for name := range tpl.Parameters {
		if d, ok := tpl.ParameterDefault(name); ok {
			overrides[name] = fmt.Sprint(d)
		}
	}
	return data, &intrinsics.ProcessorOptions{ParameterOverrides: overrides}
}

// Every table in template.yaml — the audit table and any data table — is
// checked against CloudFormation's resource schema as goformation encodes
// it: an unknown or misspelt property, or a value of the wrong type, fails
// here rather than at deploy time. (DynamoDB Local would accept the
// converted table either way, since TableInput ignores what it does not
// know.)
func TestRepoTablesMatchCloudFormationSchema(t *testing.T) {
	tpl, err := samtemplate.LoadRepo()
	if err != nil {
		t.Fatal(err)
	}
	data, opts := tablesAsCloudFormation(t, tpl)
	cf, err := goformation.ParseJSONWithOptions(data, opts)
	if err != nil {
		t.Fatalf("template.yaml tables do not match the CloudFormation schema: %v", err)
	}
	audit, err := cf.GetDynamoDBTableWithName("AuditTable")
	if err != nil {
		t.Fatal(err)
	}
	if audit.TimeToLiveSpecification == nil || aws.ToString(audit.TimeToLiveSpecification.AttributeName) != "expiresAt" ||
		audit.PointInTimeRecoverySpecification == nil || audit.SSESpecification == nil || len(audit.GlobalSecondaryIndexes) != 3 {
		t.Errorf("AuditTable as CloudFormation sees it: %+v", audit)
	}

	// The check has teeth: a misspelt property is caught.
	bad := strings.Replace(string(data), `"SSEEnabled"`, `"SSEEnable"`, 1)
	if _, err := goformation.ParseJSONWithOptions([]byte(bad), opts); err == nil {
		t.Error("a misspelt SSESpecification property passed the schema check")
	}
}
