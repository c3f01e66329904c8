package ddbproxy

import (
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/internal/iam"
)

func TestRequestsYieldAWSConditionKeys(t *testing.T) {
	schemas := map[string]*KeySchema{
		"AuditTable":      {PartitionKey: "rowKey", Keys: []string{"rowKey"}},
		"TasksTable":      {PartitionKey: "taskId", Keys: []string{"taskId"}},
		"BroadcastsTable": {PartitionKey: "id", Keys: []string{"id"}, Indexes: map[string][]string{"byChannel": {"channel", "createdAt"}}},
	}
	arn := func(t string) string { return "arn:aws:dynamodb:us-east-1:000000000000:table/" + t }
	lookup := func(t string) *KeySchema { return schemas[t] }
	type want struct {
		action, resource string
		keys             map[string]string // key → values joined by ","; "?" unknown; "-" absent
	}
	cases := []struct {
		op, body string
		want     want
	}{
		{"PutItem", `{"TableName":"AuditTable","Item":{"rowKey":{"S":"broadcast_get#1"},"tool":{"S":"x"}},"ConditionExpression":"attribute_not_exists(rowKey) OR (#status = :pending AND attemptId = :attempt)","ExpressionAttributeNames":{"#status":"status"}}`,
			want{"dynamodb:PutItem", arn("AuditTable"), map[string]string{"dynamodb:LeadingKeys": "broadcast_get#1", "dynamodb:Attributes": "attemptId,rowKey,status,tool", "dynamodb:ReturnValues": "-", "dynamodb:Select": "-"}}},
		{"UpdateItem", `{"TableName":"arn:aws:dynamodb:us-east-1:000000000000:table/TasksTable","Key":{"taskId":{"S":"t1"}},"UpdateExpression":"SET #runId = :run, #attempts = if_not_exists(#attempts, :zero) + :one, #version = #version + :one REMOVE a.b[2]","ExpressionAttributeNames":{"#runId":"runId","#attempts":"attempts","#version":"version"},"ReturnValues":"ALL_NEW"}`,
			want{"dynamodb:UpdateItem", arn("TasksTable"), map[string]string{"dynamodb:LeadingKeys": "t1", "dynamodb:Attributes": "a,attempts,runId,taskId,version", "dynamodb:ReturnValues": "ALL_NEW"}}},
		{"GetItem", `{"TableName":"TasksTable","Key":{"taskId":{"S":"t1"}}}`,
			want{"dynamodb:GetItem", arn("TasksTable"), map[string]string{"dynamodb:LeadingKeys": "t1", "dynamodb:Attributes": "?", "dynamodb:Select": "ALL_ATTRIBUTES"}}},
		{"GetItem", `{"TableName":"TasksTable","Key":{"taskId":{"S":"t1"}},"ProjectionExpression":"#status, #expiresAt","ExpressionAttributeNames":{"#status":"status","#expiresAt":"expiresAt"}}`,
			want{"dynamodb:GetItem", arn("TasksTable"), map[string]string{"dynamodb:Attributes": "expiresAt,status,taskId", "dynamodb:Select": "SPECIFIC_ATTRIBUTES"}}},
		{"DeleteItem", `{"TableName":"BroadcastsTable","Key":{"id":{"S":"b1"}},"ConditionExpression":"attribute_exists(id)","ReturnValues":"ALL_OLD"}`,
			want{"dynamodb:DeleteItem", arn("BroadcastsTable"), map[string]string{"dynamodb:LeadingKeys": "b1", "dynamodb:Attributes": "id", "dynamodb:ReturnValues": "ALL_OLD"}}},
		{"Query", `{"TableName":"BroadcastsTable","IndexName":"byChannel","KeyConditionExpression":"channel = :channel","ExpressionAttributeValues":{":channel":{"S":"general"}}}`,
			want{"dynamodb:Query", arn("BroadcastsTable") + "/index/byChannel", map[string]string{"dynamodb:LeadingKeys": "?", "dynamodb:Select": "ALL_PROJECTED_ATTRIBUTES"}}},
		{"Query", `{"TableName":"AuditTable","KeyConditionExpression":"#k = :k","ExpressionAttributeNames":{"#k":"rowKey"},"ExpressionAttributeValues":{":k":{"S":"gateway#1"}},"Select":"COUNT"}`,
			want{"dynamodb:Query", arn("AuditTable"), map[string]string{"dynamodb:LeadingKeys": "gateway#1", "dynamodb:Select": "COUNT", "dynamodb:Attributes": "rowKey"}}},
		{"Scan", `{"TableName":"AuditTable"}`,
			want{"dynamodb:Scan", arn("AuditTable"), map[string]string{"dynamodb:LeadingKeys": "-", "dynamodb:Select": "ALL_ATTRIBUTES"}}},
		{"PutItem", `{"TableName":"Unknown","Item":{"k":{"S":"x"}}}`,
			want{"dynamodb:PutItem", arn("Unknown"), map[string]string{"dynamodb:LeadingKeys": "?"}}},
	}
	for _, c := range cases {
		got, err := derive(c.op, []byte(c.body), arn, lookup)
		if err != nil {
			t.Fatalf("%s %s: %v", c.op, c.body, err)
		}
		if len(got) != 1 || got[0].action != c.want.action || got[0].resource != c.want.resource {
			t.Fatalf("%s %s: %+v", c.op, c.body, got)
		}
		for k, w := range c.want.keys {
			v, ok := got[0].ctx[strings.ToLower(k)]
			var s string
			switch {
			case !ok:
				s = "-"
			case v.Unknown:
				s = "?"
			default:
				s = strings.Join(v.Values, ",")
			}
			if s != w {
				t.Errorf("%s %s: %s = %q, want %q", c.op, c.body, k, s, w)
			}
		}
	}
}

func TestShapesNotEvaluatedAreRefused(t *testing.T) {
	arn := func(t string) string { return t }
	for _, op := range []string{"BatchWriteItem", "TransactWriteItems", "ExecuteStatement", "TransactGetItems"} {
		if _, err := derive(op, []byte(`{}`), arn, func(string) *KeySchema { return nil }); err == nil || !strings.Contains(err.Error(), op) {
			t.Errorf("%s: %v", op, err)
		}
	}
	_, err := derive("UpdateItem", []byte(`{"TableName":"T","Key":{"k":{"S":"x"}},"UpdateExpression":"SET #a = :v"}`), arn, func(string) *KeySchema { return &KeySchema{PartitionKey: "k", Keys: []string{"k"}} })
	if err != nil {
		t.Fatal(err)
	}
	var _ iam.Context
}

// TestBatchGetItemIsAuthorizedPerTable: a BatchGetItem needs
// dynamodb:BatchGetItem on every table it reads, each with LeadingKeys the
// partition key values it names there — a role allowed one writer's keys
// cannot read another's rows by batching them.
func TestBatchGetItemIsAuthorizedPerTable(t *testing.T) {
	arn := func(t string) string { return "arn:aws:dynamodb:us-east-1:000000000000:table/" + t }
	ks := func(string) *KeySchema { return &KeySchema{PartitionKey: "rowKey", Keys: []string{"rowKey"}} }
	body := `{"RequestItems":{"B":{"Keys":[{"rowKey":{"S":"gateway#1"}},{"rowKey":{"S":"tool#1"}}],"ProjectionExpression":"#s","ExpressionAttributeNames":{"#s":"status"}},"A":{"Keys":[{"rowKey":{"S":"x"}}]}}}`
	got, err := derive("BatchGetItem", []byte(body), arn, ks)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].resource != arn("A") || got[1].resource != arn("B") || got[0].action != "dynamodb:BatchGetItem" {
		t.Fatalf("authorizations %+v", got)
	}
	lk := got[1].ctx["dynamodb:leadingkeys"]
	if strings.Join(lk.Values, ",") != "gateway#1,tool#1" {
		t.Errorf("LeadingKeys of B = %+v", lk)
	}
	if at := got[1].ctx["dynamodb:attributes"]; strings.Join(at.Values, ",") != "rowKey,status" {
		t.Errorf("Attributes of B = %+v", at)
	}
}
