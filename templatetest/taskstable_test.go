package templatetest

import (
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mcpfn/mcpfn/taskstore"
)

// TestTasksTableServesTheTaskStore: the TasksTable is keyed as taskstore
// writes it, expires items through the store's TTL attribute, is billed on
// demand and keeps PITR and SSE like the other tables. (The taskstore tests
// create their table from this definition, so the rest is exercised there.)
func TestTasksTableServesTheTaskStore(t *testing.T) {
	table := tableInput(t, "TasksTable")
	var attrs []string
	for _, a := range table.AttributeDefinitions {
		attrs = append(attrs, aws.ToString(a.AttributeName)+"/"+string(a.AttributeType))
	}
	if want := taskstore.KeyAttribute + "/HASH"; keysOf(table.KeySchema) != want {
		t.Errorf("key schema %s, want %s", keysOf(table.KeySchema), want)
	}
	if want := "[" + taskstore.KeyAttribute + "/S]"; fmt.Sprint(attrs) != want {
		t.Errorf("attribute definitions %v, want %s", attrs, want)
	}
	if table.BillingMode != types.BillingModePayPerRequest {
		t.Errorf("BillingMode = %v, want PAY_PER_REQUEST", table.BillingMode)
	}
	rt := raw(t)
	if ttl := rt.TTLAttribute("TasksTable"); ttl != taskstore.TTLAttribute {
		t.Errorf("TTL on %q, want enabled on %s", ttl, taskstore.TTLAttribute)
	}
	// What DynamoDB Local does not implement, read as written.
	p := mustResource(t, "TasksTable").Properties
	if dig(p, "PointInTimeRecoverySpecification", "PointInTimeRecoveryEnabled") != true {
		t.Error("TasksTable has no point-in-time recovery")
	}
	if dig(p, "SSESpecification", "SSEEnabled") != true {
		t.Error("TasksTable has no SSE")
	}
	if _, ok := rt.Outputs["TasksTableName"]; !ok {
		t.Error("no output TasksTableName")
	}
}
