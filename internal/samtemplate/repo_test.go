package samtemplate_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/internal/dynamolocal"
	"github.com/mcpfn/mcpfn/internal/samtemplate"
)

// Every table template.yaml declares — the audit table and the data tables —
// can be created in DynamoDB Local as the local stack will create it.
func TestRepoTablesCreateInDynamoDBLocal(t *testing.T) {
	ddb := dynamolocal.ForTest(t)
	tpl, err := samtemplate.LoadRepo()
	if err != nil {
		t.Fatal(err)
	}
	ids := append(tpl.LogicalIDs(samtemplate.TypeDynamoDBTable), tpl.LogicalIDs(samtemplate.TypeSimpleTable)...)
	if len(ids) == 0 {
		t.Fatal("template.yaml declares no tables")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	for _, id := range ids {
		in, err := tpl.TableInput(id, dynamolocal.UniqueName(t, id))
		if err != nil {
			t.Errorf("%s: %v", id, err)
			continue
		}
		if err := ddb.CreateTable(ctx, in); err != nil {
			t.Errorf("%s: %v", id, err)
		}
	}
}

// Every SAM function's environment resolves from what a local run knows:
// a name for each resource (Ref) and an ARN for each (Fn::GetAtt …Arn).
func TestRepoFunctionEnvironmentsResolveLocally(t *testing.T) {
	tpl, err := samtemplate.LoadRepo()
	if err != nil {
		t.Fatal(err)
	}
	vals := samtemplate.Values{Refs: map[string]string{}, Attrs: map[string]string{}}
	for id := range tpl.Resources("") {
		vals.Refs[id] = "local-" + id
		vals.Attrs[id+".Arn"] = "arn:aws:local:us-east-1:123456789012:" + id
	}
	for _, id := range tpl.LogicalIDs(samtemplate.TypeServerlessFunction) {
		env, err := tpl.FunctionEnvironment(id, vals)
		if err != nil {
			t.Error(err)
			continue
		}
		if env["MCPFN_AUDIT_TABLE"] != "local-AuditTable" {
			t.Errorf("%s: MCPFN_AUDIT_TABLE = %q, want the audit table's local name", id, env["MCPFN_AUDIT_TABLE"])
		}
	}
}
