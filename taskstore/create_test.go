package taskstore_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/taskstore"
)

// A new task is working, durable at once (a consistent Get finds it), has
// an unguessable id and carries the defaults of the store.
func TestCreateThenGetReturnsWorkingTask(t *testing.T) {
	s, c := newStore(t, taskstore.Options{TTL: 10 * time.Minute, PollInterval: 500 * time.Millisecond})
	created := create(t, s)
	got := get(t, s, created.ID)
	if got.Status != taskstore.StatusWorking || got.Owner != alice || got.Tool != "slow_compute" ||
		got.Function != "mcpfn-slow-compute" || got.CallID != "call-1" {
		t.Errorf("task = %+v", got)
	}
	if !got.CreatedAt.Equal(c.Now()) || !got.LastUpdatedAt.Equal(c.Now()) {
		t.Errorf("createdAt %v lastUpdatedAt %v, want %v", got.CreatedAt, got.LastUpdatedAt, c.Now())
	}
	if got.TTL != 10*time.Minute || got.PollInterval != 500*time.Millisecond {
		t.Errorf("ttl %v poll %v", got.TTL, got.PollInterval)
	}
	if got.ExpiresAt.Before(c.Now().Add(10 * time.Minute)) {
		t.Errorf("expiresAt %v before createdAt + ttl", got.ExpiresAt)
	}
	if string(got.Params) != string(created.Params) || got.Version != 1 || got.Attempts != 0 || got.RunID != "" {
		t.Errorf("task = %+v", got)
	}
}

// Ids are the tool's name, a dot and 128 random bits, base64url: 22
// characters, never '#', distinct; ToolOf reads the tool back and refuses
// anything else.
func TestTaskIDsAreUnguessable(t *testing.T) {
	s, _ := newStore(t, taskstore.Options{})
	seen := map[string]bool{}
	for range 20 {
		id := create(t, s).ID
		random, ok := strings.CutPrefix(id, "slow_compute.")
		if tool, valid := taskstore.ToolOf(id); !ok || len(random) != 22 || strings.ContainsAny(id, "#+/=") || seen[id] || !valid || tool != "slow_compute" {
			t.Fatalf("id %q (seen %v)", id, seen[id])
		}
		seen[id] = true
	}
	for _, bad := range []string{"", "AAAAAAAAAAAAAAAAAAAAAA", ".AAAAAAAAAAAAAAAAAAAAAA", "a.AAAAAAAAAAAAAAAAAAAAA", "a#b.AAAAAAAAAAAAAAAAAAAAAA",
		"cancel#x", "gateway#slots#all", strings.Repeat("a", 65) + ".AAAAAAAAAAAAAAAAAAAAAA", "a.AAAAAAAAAAAAAAAAAAAAA/"} {
		if _, ok := taskstore.ToolOf(bad); ok {
			t.Errorf("ToolOf(%q) accepted it", bad)
		}
	}
	if _, err := s.Create(t.Context(), taskstore.NewTask{Owner: alice, Tool: "slow_compute", ID: taskstore.NewID("other_tool")}); err == nil {
		t.Error("Create took an id of another tool")
	}
}

// Params and NewTask overrides: TTL and PollInterval from NewTask win over
// the store's.
func TestCreateOverridesTTLAndPollInterval(t *testing.T) {
	s, _ := newStore(t, taskstore.Options{})
	task, err := s.Create(t.Context(), taskstore.NewTask{Owner: alice, Tool: "slow_compute", TTL: 2 * time.Second, PollInterval: 250 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if got := get(t, s, task.ID); got.TTL != 2*time.Second || got.PollInterval != 250*time.Millisecond {
		t.Errorf("ttl %v poll %v", got.TTL, got.PollInterval)
	}
}

// Params that would not fit the item are refused before any write.
func TestCreateRefusesOversizedParams(t *testing.T) {
	s, _ := newStore(t, taskstore.Options{MaxPayloadBytes: 1024})
	params, _ := json.Marshal(map[string]string{"x": strings.Repeat("a", 2000)})
	_, err := s.Create(t.Context(), taskstore.NewTask{Owner: alice, Params: params})
	wantErr(t, "Create", err, taskstore.ErrTooLarge)
	if !strings.Contains(err.Error(), "1 KB") || !strings.Contains(err.Error(), "400 KB") {
		t.Errorf("error %q does not name the limits", err)
	}
}
