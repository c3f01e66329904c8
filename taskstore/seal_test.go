package taskstore_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mcpfn/mcpfn/taskstore"
)

func recordKeys(t *testing.T, keys ...string) taskstore.RecordKeys {
	t.Helper()
	var bs [][]byte
	for _, k := range keys {
		bs = append(bs, bytes.Repeat([]byte(k), 32))
	}
	ks, err := taskstore.NewRecordKeys(bs...)
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

// set rewrites one attribute of an item as anyone who may write the table
// can: no condition, no seal.
func (tb table) set(t *testing.T, id, attr string, v types.AttributeValue) {
	t.Helper()
	_, err := tb.client.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{
		TableName: aws.String(tb.name), Key: map[string]types.AttributeValue{"taskId": &types.AttributeValueMemberS{Value: id}},
		UpdateExpression:          aws.String("SET #a = :v"),
		ExpressionAttributeNames:  map[string]string{"#a": attr},
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": v},
	})
	if err != nil {
		t.Fatal(err)
	}
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// TestSealedStoreRefusesARewrittenRecord: a sealed store (the gateway's)
// refuses, as ErrTampered, every record of the owner's whose fixed fields
// changed after it was sealed — tool, function, call id, arguments, owner,
// lifetime — and a record nobody sealed; Get, Update and Cancel all refuse
// and none of them writes. Another owner's record stays not found. A
// record sealed with the previous key still verifies (a rotation).
func TestSealedStoreRefusesARewrittenRecord(t *testing.T) {
	plain, _, tb := newStoreTable(t, taskstore.Options{})
	sealed := plain.Sealed(recordKeys(t, "k"))
	ctx := t.Context()
	fresh := func(t *testing.T) *taskstore.Task {
		t.Helper()
		task, err := sealed.Create(ctx, taskstore.NewTask{Owner: alice, Tool: "slow_compute", Function: "fn-slow", CallID: "c-1",
			Params: json.RawMessage(`{"name":"slow_compute","arguments":{"seconds":1}}`)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sealed.Get(ctx, alice, task.ID); err != nil {
			t.Fatalf("a fresh sealed task: %v", err)
		}
		return task
	}
	for attr, v := range map[string]types.AttributeValue{
		"tool":      s("broadcast_delete"),
		"function":  s("fn-broadcast-delete"),
		"callId":    s("c-2"),
		"params":    s(`{"name":"broadcast_delete","arguments":{"id":"x"}}`),
		"expiresAt": &types.AttributeValueMemberN{Value: "99999999999"},
		"createdAt": &types.AttributeValueMemberN{Value: "1"},
		"seal":      &types.AttributeValueMemberB{Value: bytes.Repeat([]byte{1}, 32)},
	} {
		t.Run(attr, func(t *testing.T) {
			task := fresh(t)
			tb.set(t, task.ID, attr, v)
			_, err := sealed.Get(ctx, alice, task.ID)
			wantErr(t, "Get", err, taskstore.ErrTampered)
			_, _, err = sealed.Update(ctx, alice, task.ID, map[string]json.RawMessage{"ok": json.RawMessage(`{}`)})
			wantErr(t, "Update", err, taskstore.ErrTampered)
			wantErr(t, "Cancel", sealed.Cancel(ctx, alice, task.ID), taskstore.ErrTampered)
			_, err = sealed.Get(ctx, bob, task.ID)
			wantErr(t, "Get by bob", err, taskstore.ErrNotFound)
			if got, err := plain.Get(ctx, alice, task.ID); err != nil || got.Status != taskstore.StatusWorking {
				t.Fatalf("the refused record was changed: %+v %v", got, err)
			}
		})
	}
	t.Run("owner", func(t *testing.T) {
		// Moved to bob: bob's sealed store refuses it, alice no longer
		// finds it.
		task := fresh(t)
		tb.set(t, task.ID, "owner", s(bob))
		_, err := sealed.Get(ctx, bob, task.ID)
		wantErr(t, "Get by bob", err, taskstore.ErrTampered)
		_, err = sealed.Get(ctx, alice, task.ID)
		wantErr(t, "Get by alice", err, taskstore.ErrNotFound)
	})
	t.Run("unsealed", func(t *testing.T) {
		// Written without the gateway's key (an unsealed store stands for
		// any writer of the table).
		task, err := plain.Create(ctx, taskstore.NewTask{Owner: alice, Tool: "slow_compute"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = sealed.Get(ctx, alice, task.ID)
		wantErr(t, "Get", err, taskstore.ErrTampered)
	})
	t.Run("rotation", func(t *testing.T) {
		task := fresh(t)
		rotated := plain.Sealed(recordKeys(t, "n", "k"))
		if _, err := rotated.Get(ctx, alice, task.ID); err != nil {
			t.Fatalf("sealed with the previous key: %v", err)
		}
		_, err := plain.Sealed(recordKeys(t, "n")).Get(ctx, alice, task.ID)
		wantErr(t, "after the key is gone", err, taskstore.ErrTampered)
	})
	t.Run("run attributes", func(t *testing.T) {
		// What a run writes (its claim, status, outcome) is not sealed.
		task := fresh(t)
		claim(t, plain, task.ID, "run-1")
		if err := plain.Finish(ctx, task.ID, "run-1", taskstore.Completed(json.RawMessage(`{"content":[]}`))); err != nil {
			t.Fatal(err)
		}
		if got, err := sealed.Get(ctx, alice, task.ID); err != nil || got.Status != taskstore.StatusCompleted {
			t.Fatalf("a finished task: %+v %v", got, err)
		}
	})
}

// TestRecordKeysNeedLength: a record key shorter than 32 bytes, or none,
// is refused.
func TestRecordKeysNeedLength(t *testing.T) {
	if _, err := taskstore.NewRecordKeys(); err == nil {
		t.Error("no key accepted")
	}
	if _, err := taskstore.NewRecordKeys(make([]byte, 31)); err == nil {
		t.Error("a 31-byte key accepted")
	}
}
