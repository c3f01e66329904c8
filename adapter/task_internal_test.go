package adapter

import (
	"context"
	"testing"
	"time"
)

// TestTaskOptionsFromEnv: no table, no tasks; a table gives the function
// its store; a watch interval that is not a positive duration stops Start.
func TestTaskOptionsFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	if opts, err := taskOptionsFromEnv(context.Background(), env(nil)); err != nil || len(opts) != 0 {
		t.Fatalf("no table: %v, %v", opts, err)
	}
	opts, err := taskOptionsFromEnv(context.Background(), env(map[string]string{"MCPFN_TASKS_TABLE": "tasks", EnvTaskWatchInterval: "100ms"}))
	if err != nil {
		t.Fatal(err)
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.tasks.store == nil || o.tasks.store.Table() != "tasks" || o.tasks.interval() != 100*time.Millisecond {
		t.Fatalf("options %+v", o.tasks)
	}
	for _, bad := range []string{"soon", "-1s", "0"} {
		if _, err := taskOptionsFromEnv(context.Background(), env(map[string]string{"MCPFN_TASKS_TABLE": "tasks", EnvTaskWatchInterval: bad})); err == nil {
			t.Errorf("%s=%q accepted", EnvTaskWatchInterval, bad)
		}
	}
}
