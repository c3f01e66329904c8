package taskstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mcpfn/mcpfn/internal/dynamolocal"
	"github.com/mcpfn/mcpfn/taskstore"
)

func TestMain(m *testing.M) { dynamolocal.Main(m) }

// clock is a test clock: expiry is tested by moving it, not by sleeping.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// newStore returns a store on a fresh TasksTable, created from
// template.yaml as the local stack creates it, and the store's clock.
func newStore(t *testing.T, opts taskstore.Options) (*taskstore.Store, *clock) {
	t.Helper()
	s, c, _ := newStoreTable(t, opts)
	return s, c
}

// table is a store's table as anyone with write access to it sees it: the
// test's operator credentials, outside any role.
type table struct {
	client *dynamodb.Client
	name   string
}

// newStoreTable is newStore with the raw table.
func newStoreTable(t *testing.T, opts taskstore.Options) (*taskstore.Store, *clock, table) {
	t.Helper()
	srv, name := dynamolocal.TemplateTableForTest(t, "TasksTable", "tasks")
	c := &clock{t: time.Now().Truncate(time.Millisecond)}
	if opts.Now == nil {
		opts.Now = c.Now
	}
	client := srv.Client(t.Context())
	return taskstore.New(client, name, opts), c, table{client, name}
}

const (
	alice = "jwt:alice"
	bob   = "jwt:bob"
)

// create makes a task for alice and fails the test on error.
func create(t *testing.T, s *taskstore.Store) *taskstore.Task {
	t.Helper()
	task, err := s.Create(t.Context(), taskstore.NewTask{
		Owner:    alice,
		Tool:     "slow_compute",
		Function: "mcpfn-slow-compute",
		CallID:   "call-1",
		Params:   json.RawMessage(`{"name":"slow_compute","arguments":{"seconds":2}}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// claim claims task for runID and fails the test on error.
func claim(t *testing.T, s *taskstore.Store, id, runID string) *taskstore.Task {
	t.Helper()
	task, err := s.Claim(t.Context(), id, runID)
	if err != nil {
		t.Fatalf("Claim(%s): %v", runID, err)
	}
	return task
}

// get reads alice's task and fails the test on error.
func get(t *testing.T, s *taskstore.Store, id string) *taskstore.Task {
	t.Helper()
	task, err := s.Get(t.Context(), alice, id)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	return task
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: err = %v, want %v", what, err, want)
	}
}

// race runs fs at once, as close together as goroutines allow, and returns
// their errors in order.
func race(fs ...func(context.Context) error) []error {
	errs := make([]error, len(fs))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, f := range fs {
		wg.Go(func() {
			<-start
			errs[i] = f(context.Background())
		})
	}
	close(start)
	wg.Wait()
	return errs
}
