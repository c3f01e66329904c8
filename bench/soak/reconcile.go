package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// reconciliation is the calls the clients saw against the rows of the
// audit table.
type reconciliation struct {
	Calls, Tasks int // call ids the results named; tasks created
	Rows         int // rows in the table
	Matched      int // calls and tasks with exactly one row
	// Missing: calls or tasks without a row. Duplicated: a call id named by
	// two results, or a call or task with more than one row. Extra: rows of
	// no call or task the clients saw. Pending: rows never made final.
	Missing, Duplicated, Extra, Pending []string
	ScanTime                            time.Duration
	Segments                            int32 // of the Scan
}

func (r reconciliation) exact() bool {
	return len(r.Missing) == 0 && len(r.Duplicated) == 0 && len(r.Extra) == 0 && len(r.Pending) == 0 &&
		r.Calls+r.Tasks == r.Rows && r.Matched == r.Rows
}

// auditRow is what the reconciliation reads of a row.
type auditRow struct {
	key, callID, taskID, status string
}

// rowsPerSegment is about how many rows one segment of the audit table's
// Scan holds. DynamoDB Local answers a page only after loading every item
// of the (segment of the) table into its heap, and a plain Scan of 60,000
// rows failed with InternalFailure at its 512 MiB heap (issue 21): split
// in segments of this size, each page loads one segment, and reading the
// whole table takes time linear in it, not quadratic.
const rowsPerSegment = 1000

// scanAudit reads every row of the audit table, about expect of them, one
// segment after the other, a page at a time.
func scanAudit(ctx context.Context, c *dynamodb.Client, table string, expect int) ([]auditRow, int32, error) {
	segments := int32(min(max(expect/rowsPerSegment, 1), 1_000_000)) // DynamoDB's limit
	var rows []auditRow
	for seg := range segments {
		var start map[string]types.AttributeValue
		for {
			in := &dynamodb.ScanInput{
				TableName:                aws.String(table),
				ProjectionExpression:     aws.String("rowKey, callId, taskId, #s"),
				ExpressionAttributeNames: map[string]string{"#s": "status"},
				ExclusiveStartKey:        start,
				ConsistentRead:           aws.Bool(true),
			}
			if segments > 1 {
				in.Segment, in.TotalSegments = aws.Int32(seg), aws.Int32(segments)
			}
			out, err := c.Scan(ctx, in)
			if err != nil {
				return nil, segments, fmt.Errorf("scanning the audit table (segment %d of %d) after %d rows: %w", seg, segments, len(rows), err)
			}
			for _, it := range out.Items {
				rows = append(rows, auditRow{key: str(it["rowKey"]), callID: str(it["callId"]), taskID: str(it["taskId"]), status: str(it["status"])})
			}
			if len(out.LastEvaluatedKey) == 0 {
				break
			}
			start = out.LastEvaluatedKey
		}
	}
	return rows, segments, nil
}

func str(v types.AttributeValue) string {
	if s, ok := v.(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

// reconcile matches the results' call ids and the tasks with the rows:
// each call id one row (its function's, or the gateway's for a call the
// function never saw), each task one row (its run's, which names the task).
func reconcile(calls, tasks map[string]int, rows []auditRow) reconciliation {
	r := reconciliation{Calls: len(calls), Tasks: len(tasks), Rows: len(rows)}
	byCall, byTask := map[string][]auditRow{}, map[string][]auditRow{}
	for _, row := range rows {
		if row.taskID != "" {
			byTask[row.taskID] = append(byTask[row.taskID], row)
		} else {
			byCall[row.callID] = append(byCall[row.callID], row)
		}
		if row.status == "pending" {
			r.Pending = append(r.Pending, row.key)
		}
	}
	for id, n := range calls {
		switch got := len(byCall[id]); {
		case n > 1:
			r.Duplicated = append(r.Duplicated, fmt.Sprintf("call %s named by %d results", id, n))
		case got == 0:
			r.Missing = append(r.Missing, "call "+id)
		case got > 1:
			r.Duplicated = append(r.Duplicated, fmt.Sprintf("call %s has %d rows", id, got))
		default:
			r.Matched++
		}
	}
	for id, n := range tasks {
		switch got := len(byTask[id]); {
		case n > 1:
			r.Duplicated = append(r.Duplicated, fmt.Sprintf("task %s created %d times", id, n))
		case got == 0:
			r.Missing = append(r.Missing, "task "+id)
		case got > 1:
			r.Duplicated = append(r.Duplicated, fmt.Sprintf("task %s has %d rows", id, got))
		default:
			r.Matched++
		}
	}
	for id, rs := range byCall {
		if calls[id] == 0 {
			for _, row := range rs {
				r.Extra = append(r.Extra, row.key)
			}
		}
	}
	for id, rs := range byTask {
		if tasks[id] == 0 {
			for _, row := range rs {
				r.Extra = append(r.Extra, row.key+" (task "+id+")")
			}
		}
	}
	for _, l := range [][]string{r.Missing, r.Duplicated, r.Extra, r.Pending} {
		slices.Sort(l)
	}
	return r
}
