package adapter

import (
	"testing"
	"time"
)

func TestSealedStateExpires(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	call := &Call{Tool: "t", Caller: &Identity{Subject: "s", AuthMethod: "jwt"}}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	sealed := sealState(key, call, "step=2", now)
	if got, err := openState(key, call, sealed, now.Add(DefaultRequestStateTTL-time.Second)); err != nil || got != "step=2" {
		t.Fatalf("within its TTL: %q, %v", got, err)
	}
	if _, err := openState(key, call, sealed, now.Add(DefaultRequestStateTTL+2*time.Second)); err == nil {
		t.Fatal("an expired state was accepted")
	}
	if _, err := openState(key, &Call{Tool: "other", Caller: call.Caller}, sealed, now); err == nil {
		t.Fatal("a state sealed for another tool was accepted")
	}
}
