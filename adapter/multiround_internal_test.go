package adapter

import (
	"encoding/json"
	"testing"
	"time"
)

func TestSealedStateExpires(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	call := &Call{Tool: "t", caller: &Identity{Subject: "s", AuthMethod: "jwt"}}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	sealed := sealState(key, call, "step=2", now)
	if got, err := openState([][]byte{key}, call, sealed, now.Add(DefaultRequestStateTTL-time.Second)); err != nil || got != "step=2" {
		t.Fatalf("within its TTL: %q, %v", got, err)
	}
	if _, err := openState([][]byte{key}, call, sealed, now.Add(DefaultRequestStateTTL+2*time.Second)); err == nil {
		t.Fatal("an expired state was accepted")
	}
	if _, err := openState([][]byte{key}, &Call{Tool: "other", caller: call.caller}, sealed, now); err == nil {
		t.Fatal("a state sealed for another tool was accepted")
	}
}

// A sealed state is single-purpose: bound to the full verified caller
// (issuer, subject, tenant), the tool and the arguments.
func TestSealedStateIsBoundToCallerTenantAndArguments(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	now := time.Now()
	base := func() *Call {
		return &Call{Tool: "t", tenant: "acme", received: json.RawMessage(`{"a":1}`),
			caller: &Identity{Subject: "s", AuthMethod: "jwt", Issuer: "https://one.example", Tenant: "acme"}}
	}
	sealed := sealState(key, base(), "x", now)
	if _, err := openState([][]byte{key}, base(), sealed, now); err != nil {
		t.Fatalf("the same call: %v", err)
	}
	// The same arguments in another key order are the same arguments.
	same := base()
	same.received = json.RawMessage(` { "a" : 1 } `)
	if _, err := openState([][]byte{key}, same, sealed, now); err != nil {
		t.Fatalf("the same arguments, spaced differently: %v", err)
	}
	for name, mutate := range map[string]func(*Call){
		"another issuer":    func(c *Call) { c.caller.Issuer = "https://two.example" },
		"another subject":   func(c *Call) { c.caller.Subject = "s2" },
		"another tenant":    func(c *Call) { c.tenant = "globex" },
		"other arguments":   func(c *Call) { c.received = json.RawMessage(`{"a":2}`) },
		"no caller":         func(c *Call) { c.caller = nil },
		"another method":    func(c *Call) { c.caller.AuthMethod = "iam" },
		"a rotated-out key": nil,
	} {
		c := base()
		keys := [][]byte{key}
		if mutate != nil {
			mutate(c)
		} else {
			keys = [][]byte{[]byte("fedcba9876543210fedcba9876543210")}
		}
		if _, err := openState(keys, c, sealed, now); err == nil {
			t.Errorf("%s: the state was accepted", name)
		}
	}
	// After a rotation the previous key still opens it.
	if _, err := openState([][]byte{[]byte("fedcba9876543210fedcba9876543210"), key}, base(), sealed, now); err != nil {
		t.Fatalf("previous key: %v", err)
	}
}
