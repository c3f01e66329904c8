package taskstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mcpfn/mcpfn/taskstore"
)

// The life of a task, gateway side and function side. (Compiled, not run:
// it needs a table.)
func Example() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		panic(err)
	}
	table, opts, err := taskstore.OptionsFromEnv(os.Getenv)
	if err != nil {
		panic(err)
	}
	store := taskstore.New(dynamodb.NewFromConfig(cfg), table, opts)

	// Gateway, tools/call from a client that declared the extension:
	// record the task, invoke the function with InvocationType Event and
	// the task id, answer the CreateTaskResult.
	task, err := store.Create(ctx, taskstore.NewTask{
		Owner: "jwt:alice", Tool: "slow_compute", Function: "mcpfn-slow-compute",
		CallID: "c-1", Params: json.RawMessage(`{"name":"slow_compute","arguments":{"seconds":60}}`),
	})
	if err != nil {
		panic(err)
	}
	answer, _ := json.Marshal(task.Created())
	fmt.Println(string(answer))

	// Function, the asynchronous run (runID = the Lambda request id).
	run, err := store.Claim(ctx, task.ID, "lambda-request-id")
	switch {
	case errors.Is(err, taskstore.ErrClaimed), errors.Is(err, taskstore.ErrCancelled):
		return // another event holds it, or nobody wants it any more
	case err != nil:
		panic(err)
	}
	handlerCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		select {
		case <-store.Watch(handlerCtx, run.ID, 2*time.Second):
			stop() // tasks/cancel: the handler sees ctx cancelled
		case <-handlerCtx.Done():
		}
	}()
	_ = store.SetStatusMessage(ctx, run.ID, run.RunID, "page 1 of 30")
	err = store.Finish(ctx, run.ID, run.RunID, taskstore.Completed(json.RawMessage(`{"content":[]}`)))
	if errors.Is(err, taskstore.ErrCancelled) {
		return // the cancel won: the task stays cancelled, audit says so
	}

	// Gateway, tasks/get.
	got, err := store.Get(ctx, "jwt:alice", task.ID)
	if errors.Is(err, taskstore.ErrNotFound) {
		return // -32602
	}
	answer, _ = json.Marshal(got.Detailed())
	fmt.Println(string(answer))
}

func ExampleTask_Detailed() {
	t := &taskstore.Task{
		ID:            "Qm9vayBvZiB0YXNrcyEhIQ",
		Owner:         "jwt:alice",
		Status:        taskstore.StatusCompleted,
		CreatedAt:     time.Date(2026, 12, 1, 4, 30, 0, 0, time.UTC),
		LastUpdatedAt: time.Date(2026, 12, 1, 4, 31, 0, 0, time.UTC),
		TTL:           time.Hour,
		PollInterval:  time.Second,
		Result:        json.RawMessage(`{"content":[{"type":"text","text":"done"}]}`),
		RequestState:  []byte("sealed"),
	}
	b, _ := json.Marshal(t.Detailed())
	fmt.Println(string(b))
	// Output:
	// {"resultType":"complete","taskId":"Qm9vayBvZiB0YXNrcyEhIQ","status":"completed","createdAt":"2026-12-01T04:30:00.000Z","lastUpdatedAt":"2026-12-01T04:31:00.000Z","ttlMs":3600000,"pollIntervalMs":1000,"result":{"content":[{"type":"text","text":"done"}]}}
}
