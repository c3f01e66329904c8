package samtemplate_test

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mcpfn/mcpfn/internal/dynamolocal"
	"github.com/mcpfn/mcpfn/internal/samtemplate"
)

func TestMain(m *testing.M) { dynamolocal.Main(m) }

// The repository's template.yaml, as deployed: the audit table's shape is
// the contract the audit package and its queries rely on.
func TestRepoTemplateAuditTable(t *testing.T) {
	tpl, err := samtemplate.LoadRepo()
	if err != nil {
		t.Fatal(err)
	}
	if tpl.Transform != "AWS::Serverless-2016-10-31" {
		t.Errorf("Transform = %v", tpl.Transform)
	}
	if d, ok := tpl.ParameterDefault("AuditRetentionDays"); !ok || d != 90 {
		t.Errorf("AuditRetentionDays default = %v %v, want 90", d, ok)
	}
	if _, ok := tpl.Outputs["AuditTableName"]; !ok {
		t.Error("no AuditTableName output")
	}
	table, ok := tpl.Resource("AuditTable")
	if !ok || table.Type != samtemplate.TypeDynamoDBTable {
		t.Fatalf("AuditTable = %+v", table)
	}
	p := table.Properties
	if p["BillingMode"] != "PAY_PER_REQUEST" {
		t.Errorf("BillingMode = %v", p["BillingMode"])
	}
	if pitr, _ := p["PointInTimeRecoverySpecification"].(map[string]any); pitr["PointInTimeRecoveryEnabled"] != true {
		t.Errorf("PITR = %v", p["PointInTimeRecoverySpecification"])
	}
	if sse, _ := p["SSESpecification"].(map[string]any); sse["SSEEnabled"] != true {
		t.Errorf("SSE = %v", p["SSESpecification"])
	}
	if got := tpl.TTLAttribute("AuditTable"); got != "expiresAt" {
		t.Errorf("TTLAttribute = %q, want expiresAt", got)
	}
	if table.Attributes["DeletionPolicy"] != "Retain" {
		t.Errorf("DeletionPolicy = %v, want Retain", table.Attributes["DeletionPolicy"])
	}
}

// The audit table from template.yaml, created in DynamoDB Local: every index
// exists with the keys the audit queries use, and a row is found by each.
func TestAuditTableInDynamoDBLocal(t *testing.T) {
	ddb := dynamolocal.ForTest(t)
	tpl, err := samtemplate.LoadRepo()
	if err != nil {
		t.Fatal(err)
	}
	name := dynamolocal.UniqueName(t, "audit")
	in, err := tpl.TableInput("AuditTable", name)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := ddb.CreateTable(ctx, in); err != nil {
		t.Fatal(err)
	}
	client := ddb.Client(ctx)

	desc, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	if k := desc.Table.KeySchema; len(k) != 1 || aws.ToString(k[0].AttributeName) != "rowKey" || k[0].KeyType != types.KeyTypeHash {
		t.Errorf("table key = %+v, want rowKey HASH", k)
	}
	if bm := desc.Table.BillingModeSummary; bm == nil || bm.BillingMode != types.BillingModePayPerRequest {
		t.Errorf("billing = %+v, want PAY_PER_REQUEST", bm)
	}
	wantIndexes := map[string]string{"byTrace": "traceId", "byCaller": "callerKey", "byEntity": "entityKey"}
	var names []string
	for _, g := range desc.Table.GlobalSecondaryIndexes {
		idx := aws.ToString(g.IndexName)
		names = append(names, idx)
		ks := g.KeySchema
		if len(ks) != 2 || aws.ToString(ks[0].AttributeName) != wantIndexes[idx] || ks[0].KeyType != types.KeyTypeHash ||
			aws.ToString(ks[1].AttributeName) != "startedAt" || ks[1].KeyType != types.KeyTypeRange {
			t.Errorf("index %s keys = %+v, want %s HASH, startedAt RANGE", idx, ks, wantIndexes[idx])
		}
		if g.Projection == nil || g.Projection.ProjectionType != types.ProjectionTypeAll {
			t.Errorf("index %s projection = %+v, want ALL", idx, g.Projection)
		}
	}
	sort.Strings(names)
	if want := []string{"byCaller", "byEntity", "byTrace"}; len(names) != 3 || names[0] != want[0] || names[1] != want[1] || names[2] != want[2] {
		t.Fatalf("indexes = %v, want %v", names, want)
	}

	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	row := map[string]types.AttributeValue{
		"rowKey":    s("broadcast_get#call-1"),
		"callId":    s("call-1"),
		"traceId":   s("1-5759e988-bd862e3fe1be46a994272793"),
		"callerKey": s("user-123"),
		"entityKey": s("entityId#b-42"),
		"startedAt": s("2026-11-29T12:00:00.000000000Z"),
		"expiresAt": &types.AttributeValueMemberN{Value: "1900000000"},
		"tool":      s("broadcast_get"),
	}
	if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: row}); err != nil {
		t.Fatal(err)
	}
	// A sparse row (no caller, no entity) must be accepted and stay out of
	// those indexes.
	sparse := map[string]types.AttributeValue{
		"rowKey": s("broadcast_get#call-2"), "callId": s("call-2"), "traceId": s("1-5759e988-bd862e3fe1be46a994272793"), "startedAt": s("2026-11-29T12:00:01.000000000Z"),
	}
	if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: sparse}); err != nil {
		t.Fatal(err)
	}

	for idx, want := range map[string]struct {
		key, value string
		count      int32
	}{
		"byTrace":  {"traceId", "1-5759e988-bd862e3fe1be46a994272793", 2},
		"byCaller": {"callerKey", "user-123", 1},
		"byEntity": {"entityKey", "entityId#b-42", 1},
	} {
		out, err := client.Query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(name),
			IndexName:                 aws.String(idx),
			KeyConditionExpression:    aws.String("#k = :v AND startedAt >= :from"),
			ExpressionAttributeNames:  map[string]string{"#k": want.key},
			ExpressionAttributeValues: map[string]types.AttributeValue{":v": s(want.value), ":from": s("2026-11-29T00:00:00Z")},
		})
		if err != nil {
			t.Errorf("query %s: %v", idx, err)
			continue
		}
		if out.Count != want.count {
			t.Errorf("query %s: %d rows, want %d", idx, out.Count, want.count)
			continue
		}
		// Projection ALL: the non-key attributes come back from the index.
		if tool, _ := out.Items[0]["tool"].(*types.AttributeValueMemberS); tool == nil || tool.Value != "broadcast_get" {
			t.Errorf("query %s: row %v lacks the projected tool attribute", idx, out.Items[0])
		}
	}
}
