package mcpfntest_test

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/mcpfntest"
)

func TestADestructiveCallWritesAheadAndRunsOncePerCallID(t *testing.T) {
	nb := newNotebook()
	nb.notes["n1"] = "old"
	f := mcpfntest.New(t, noteDelete.Bind(nb))

	res := f.Call(t, map[string]any{"id": "n1"}, mcpfntest.CallID("delete-n1"))
	if got := mcpfntest.Output[deleteOut](t, res); got.Text != "old" {
		t.Fatalf("output %+v", got)
	}
	if len(res.Rows) != 2 {
		t.Fatalf("%d rows, want pending then final: %+v", len(res.Rows), res.Rows)
	}
	pending, final := res.Rows[0], res.Rows[1]
	if pending.Status != audit.StatusPending || pending.CallID != "delete-n1" || !pending.Destructive || pending.Dimensions != nil {
		t.Errorf("pending row %+v", pending)
	}
	if final.Status != audit.StatusDone || !final.OK || final.CallID != "delete-n1" || final.Dimensions["entityId"] != "n1" {
		t.Errorf("final row %+v", final)
	}
	if pending.AttemptID == "" || pending.AttemptID != final.AttemptID {
		t.Errorf("attempts: pending %q, final %q", pending.AttemptID, final.AttemptID)
	}

	// The same call again is a replay: refused, not run.
	nb.notes["n1"] = "new"
	replay := f.Call(t, map[string]any{"id": "n1"}, mcpfntest.CallID("delete-n1"))
	if replay.Code() != adapter.CodeConflict {
		t.Fatalf("replay: %+v", replay.Err)
	}
	details, _ := replay.Err.Details.(map[string]any)
	if earlier, _ := details["earlierAttempt"].(map[string]any); earlier["status"] != audit.StatusDone || earlier["ok"] != true {
		t.Errorf("replay details %v", replay.Err.Details)
	}
	if n := nb.deletes.Load(); n != 1 {
		t.Fatalf("the handler ran %d times", n)
	}
	if nb.notes["n1"] != "new" {
		t.Fatal("the replay deleted the note")
	}
	// The replay handed over its own attempt's rows; its Result holds
	// them, not the first call's.
	if len(replay.Rows) != 2 || replay.Rows[1].ErrorCode != string(adapter.CodeConflict) || replay.Rows[1].AttemptID == final.AttemptID {
		t.Fatalf("replay rows %+v", replay.Rows)
	}
	if all := f.Rows(); len(all) != 4 {
		t.Fatalf("the function handed %d rows, want 4", len(all))
	}

	// A call refused before it ran left a row too: replaying its id is
	// refused, as the audit table refuses it.
	refused := f.Call(t, map[string]any{"id": 7}, mcpfntest.CallID("bad-args"))
	if refused.Code() != adapter.CodeValidation || len(refused.Rows) != 1 {
		t.Fatalf("invalid arguments: %+v, %d rows", refused.Err, len(refused.Rows))
	}
	if again := f.Call(t, map[string]any{"id": "n1"}, mcpfntest.CallID("bad-args")); again.Code() != adapter.CodeConflict {
		t.Fatalf("a call id with a row ran: %+v", again.Err)
	}
}

// A destructive handler that ignores its context outlives its call: the
// call answers TIMEOUT with its outcome unknown, and when the handler ends
// after all, its final row learns how.
func TestAHandlerThatOutlivesItsCallAddsItsLateOutcome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nb := newNotebook()
		nb.notes["n1"] = "old"
		nb.release = make(chan struct{})
		f := mcpfntest.New(t, noteDelete.Bind(nb))
		start := time.Now()
		res := f.Call(t, map[string]any{"id": "n1"}, mcpfntest.Timeout(3*time.Second))
		if res.Code() != adapter.CodeTimeout || res.Err.Retryable {
			t.Fatalf("got %+v", res.Err)
		}
		if took := time.Since(start); took != 3*time.Second-adapter.DefaultReserve {
			t.Errorf("answered after %v", took)
		}
		final := res.Rows[len(res.Rows)-1]
		if final.Outcome != audit.OutcomeUnknown || final.LateOutcome != "" {
			t.Fatalf("final row %+v", final)
		}

		close(nb.release)
		synctest.Wait()
		rows := f.Rows()
		late := rows[len(rows)-1]
		if late.LateOutcome != "ok" || late.FinishedAt == nil || late.AttemptID != final.AttemptID {
			t.Fatalf("the final row after the handler ended: %+v", late)
		}
	})
}

func TestTimeoutEndsTheCallAtItsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		res := mcpfntest.Call(t, waitForEnd, nil, mcpfntest.Timeout(time.Minute))
		if res.Code() != adapter.CodeTimeout || !res.Err.Retryable {
			t.Fatalf("got %+v", res.Err)
		}
		if took := time.Since(start); took != time.Minute-adapter.DefaultReserve {
			t.Errorf("answered after %v", took)
		}
		if row := only(t, res); row.ErrorCode != string(adapter.CodeTimeout) || row.Stage != string(adapter.StageHandler) {
			t.Errorf("row %+v", row)
		}
	})
}

// Concurrent calls to one function each get their own rows.
func TestConcurrentCallsKeepTheirOwnRows(t *testing.T) {
	f := mcpfntest.New(t, echo)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			text := fmt.Sprint("call-", i)
			res := f.Call(t, map[string]any{"text": text}, mcpfntest.As(text))
			if len(res.Rows) != 1 || res.Rows[0].Dimensions["entityId"] != text || res.Rows[0].CallerSubject != text {
				t.Errorf("%s: rows %+v", text, res.Rows)
			}
		})
	}
	wg.Wait()
	if n := len(f.Rows()); n != 50 {
		t.Fatalf("%d rows for 50 calls", n)
	}
}

// AuditTo hands the rows to a real auditor too, whose table then decides
// whether a destructive call may run.
func TestAuditToWritesTheRowsIntoTheAuditTable(t *testing.T) {
	db := mcpfntest.DynamoDB(t)
	table := db.Table(t, "AuditTable")
	var fallback bytes.Buffer
	auditor := audit.New(audit.Config{Table: table, Client: db.Client(), Fallback: &fallback})
	nb := newNotebook()
	nb.notes["n1"] = "old"
	f := mcpfntest.New(t, noteDelete.Bind(nb), mcpfntest.AuditTo(auditor))

	res := f.Call(t, map[string]any{"id": "n1"}, mcpfntest.CallID("delete-n1"), mcpfntest.As("ann", scopeWrite))
	mcpfntest.Output[deleteOut](t, res)
	if len(res.Rows) != 2 {
		t.Fatalf("%d rows in the result", len(res.Rows))
	}
	if replay := f.Call(t, map[string]any{"id": "n1"}, mcpfntest.CallID("delete-n1"), mcpfntest.As("ann", scopeWrite)); replay.Code() != adapter.CodeConflict {
		t.Fatalf("replay: %+v", replay.Err)
	}
	if n := nb.deletes.Load(); n != 1 {
		t.Fatalf("the handler ran %d times", n)
	}

	out, err := db.Client().GetItem(t.Context(), &dynamodb.GetItemInput{
		TableName:      aws.String(table),
		Key:            map[string]types.AttributeValue{audit.KeyAttribute: &types.AttributeValueMemberS{Value: audit.RowKey("note_delete", "delete-n1")}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	var stored audit.Row
	if err := attributevalue.UnmarshalMap(out.Item, &stored); err != nil {
		t.Fatal(err)
	}
	if stored.Status != audit.StatusDone || !stored.OK || stored.AttemptID != res.Rows[1].AttemptID || stored.CallerSubject != "ann" || stored.ArgsPreview != `{"id":"n1"}` {
		t.Fatalf("stored row %+v", stored)
	}
	// The refused second execution's row lost its conditional write (the
	// first execution's row keeps the key): never dropped in silence, it
	// is the one fallback line, saying why.
	if lines := strings.Split(strings.TrimSpace(fallback.String()), "\n"); len(lines) != 1 ||
		!strings.Contains(lines[0], `"reason":"refused: note_delete#delete-n1`) || !strings.Contains(lines[0], `"errorCode":"CONFLICT"`) {
		t.Fatalf("fallback lines, want only the refused CONFLICT attempt's row:\n%s", &fallback)
	}
}
