// Package taskstore keeps the tasks of the MCP Tasks extension (v2,
// SEP-2663, io.modelcontextprotocol/tasks) in a DynamoDB table, the
// TasksTable of template.yaml, so that the gateway and a tool's function
// can share a task across invocations.
//
// The gateway creates a task ([Store.Create]), answers tasks/get
// ([Store.Get]), tasks/cancel ([Store.Cancel]) and tasks/update
// ([Store.Update]), all scoped to the owner that created the task: another
// owner gets [ErrNotFound], exactly like an unknown id. The function's
// adapter claims the task for one run ([Store.Claim]), watches it for a
// cancellation while its handler runs ([Store.Watch]), reports progress
// ([Store.SetStatusMessage]) and records the outcome ([Store.Finish]).
//
// Every write is conditional, so the state machine holds under races:
//
//	working ──Finish──▶ completed | failed | input_required
//	input_required ──Update (all answered)──▶ working
//	working | input_required ──Cancel──▶ cancelled
//
// completed, failed and cancelled are terminal: nothing changes them. A
// Finish loses to a Cancel (the task stays cancelled) and to another run's
// claim; two Finishes of one run cannot both win.
//
// Tasks expire: the item carries expiresAt (the table's TTL attribute), and
// since DynamoDB deletes expired items lazily, every read treats an expired
// item as absent.
//
// The same table holds the cancel markers of synchronous calls
// ([Store.MarkCancelled], [Store.CancelledSince]): the gateway writes one on
// notifications/cancelled and the adapter polls for it while a handler runs.
//
// Records are untrusted input to the gateway (decision 0033). A task's id
// is "<tool>.<random>" ([NewID]), so a tool function's role can be confined
// to its own tasks, and to the attributes a run writes ([RunAttributes]);
// markers ("cancel#…") and the gateway's slot items ("gateway#…") are the
// gateway's alone. The gateway's store is [Store.Sealed]: it MACs each
// task's fixed fields at creation and refuses a record that no longer
// verifies ([ErrTampered]). And it admits a task only into a free slot of
// its owner and of the total ([Store.Admit], [Limits]), so long work is
// bounded.
//
// [Task.Created] and [Task.Detailed] give the wire shapes the extension
// returns (CreateTaskResult and the tasks/get result); the item's sealed
// request state and its owner never appear in them.
package taskstore
