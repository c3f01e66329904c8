package templatetest

import (
	"fmt"
	"testing"

	"github.com/mcpfn/mcpfn/taskstore"
)

// TestTasksTableServesTheTaskStore: the TasksTable is keyed as taskstore
// writes it, expires items through the store's TTL attribute, is billed on
// demand and keeps PITR and SSE like the other tables. (The taskstore tests
// create their table from this definition, so the rest is exercised there.)
func TestTasksTableServesTheTaskStore(t *testing.T) {
	table, err := typed(t).GetDynamoDBTableWithName("TasksTable")
	if err != nil {
		t.Fatal(err)
	}
	var keys, attrs []string
	for _, ks := range table.KeySchema {
		keys = append(keys, ks.AttributeName+"/"+ks.KeyType)
	}
	for _, a := range table.AttributeDefinitions {
		attrs = append(attrs, a.AttributeName+"/"+a.AttributeType)
	}
	if want := "[" + taskstore.KeyAttribute + "/HASH]"; fmt.Sprint(keys) != want {
		t.Errorf("key schema %v, want %s", keys, want)
	}
	if want := "[" + taskstore.KeyAttribute + "/S]"; fmt.Sprint(attrs) != want {
		t.Errorf("attribute definitions %v, want %s", attrs, want)
	}
	if table.BillingMode == nil || *table.BillingMode != "PAY_PER_REQUEST" {
		t.Errorf("BillingMode = %v, want PAY_PER_REQUEST", table.BillingMode)
	}
	if ttl := table.TimeToLiveSpecification; ttl == nil || !ttl.Enabled || ttl.AttributeName == nil || *ttl.AttributeName != taskstore.TTLAttribute {
		t.Errorf("TTL = %+v, want enabled on %s", ttl, taskstore.TTLAttribute)
	}
	if p := table.PointInTimeRecoverySpecification; p == nil || p.PointInTimeRecoveryEnabled == nil || !*p.PointInTimeRecoveryEnabled {
		t.Error("TasksTable has no point-in-time recovery")
	}
	if sse := table.SSESpecification; sse == nil || !sse.SSEEnabled {
		t.Error("TasksTable has no SSE")
	}
	if _, ok := raw(t).Outputs["TasksTableName"]; !ok {
		t.Error("no output TasksTableName")
	}
}
