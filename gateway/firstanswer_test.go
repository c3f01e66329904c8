package gateway

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestFirstAnswerRunsOnceAfterTheFirstToolCall: Config.FirstAnswer (the
// gateway command ends its start-up collector setting there) runs when the
// first tools/call has been answered — not at initialize or tools/list —
// and once.
func TestFirstAnswerRunsOnceAfterTheFirstToolCall(t *testing.T) {
	var calls atomic.Int32
	answered := make(chan struct{})
	e := newEnv(t, func(c *Config) {
		c.FirstAnswer = func() {
			if calls.Add(1) == 1 {
				close(answered)
			}
		}
	})
	cs := e.mustConnect(t, "first-answer", "1.0", bearer(e.iss.token(t, "alice", nil)))
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("FirstAnswer ran %d times before any tools/call", n)
	}
	callTool(t, cs, "echo_call", map[string]any{"entityId": "e-1"})
	select {
	case <-answered:
	case <-time.After(30 * time.Second): // a safety net, not a timing assertion
		t.Fatal("FirstAnswer never ran after the first tools/call")
	}
	callTool(t, cs, "echo_call", map[string]any{"entityId": "e-2"})
	callTool(t, cs, "echo_call", map[string]any{"entityId": "e-3"})
	if n := calls.Load(); n != 1 {
		t.Errorf("FirstAnswer ran %d times, want 1", n)
	}
}
