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
}

func (r reconciliation) exact() bool {
	return len(r.Missing) == 0 && len(r.Duplicated) == 0 && len(r.Extra) == 0 && len(r.Pending) == 0 &&
		r.Calls+r.Tasks == r.Rows && r.Matched == r.Rows
}

// auditRow is what the reconciliation reads of a row.
type auditRow struct {
	key, callID, taskID, status string
}

// scanAudit reads every row of the audit table, a page at a time.
func scanAudit(ctx context.Context, c *dynamodb.Client, table string) ([]auditRow, error) {
	var rows []auditRow
	var start map[string]types.AttributeValue
	for {
		out, err := c.Scan(ctx, &dynamodb.ScanInput{
			TableName:                aws.String(table),
			ProjectionExpression:     aws.String("rowKey, callId, taskId, #s"),
			ExpressionAttributeNames: map[string]string{"#s": "status"},
			ExclusiveStartKey:        start,
			ConsistentRead:           aws.Bool(true),
		})
		if err != nil {
			return nil, fmt.Errorf("scanning the audit table after %d rows: %w", len(rows), err)
		}
		for _, it := range out.Items {
			rows = append(rows, auditRow{key: str(it["rowKey"]), callID: str(it["callId"]), taskID: str(it["taskId"]), status: str(it["status"])})
		}
		if len(out.LastEvaluatedKey) == 0 {
			return rows, nil
		}
		start = out.LastEvaluatedKey
	}
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
