package audit_test

import (
	"encoding/json"
	"testing"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/internal/lambdatest"
	"github.com/mcpfn/mcpfn/wire"
)

func callerEnvelope(t *testing.T, callID string, caller map[string]any) []byte {
	t.Helper()
	var id adapter.Identity
	if b, err := json.Marshal(caller); err != nil || json.Unmarshal(b, &id) != nil {
		t.Fatalf("caller %v", caller)
	}
	args, err := json.Marshal(deleteIn{ID: "b-" + callID})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(map[string]any{
		"mcpfn": wire.EnvelopeVersion, "callId": callID,
		"params":    map[string]any{"name": "broadcast_delete", "arguments": json.RawMessage(args)},
		"callToken": lambdatest.Token(testFunction, "broadcast_delete", callID, &id, args),
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCallerKeySeparatesIssuersAndTenants (L6): two principals with the
// same subject from different issuers, auth methods or tenants are
// different callers in the byCaller index.
func TestCallerKeySeparatesIssuersAndTenants(t *testing.T) {
	e := newEnv(t)
	fn := newFunction(deleteTool(t, false), adapter.WithAuditor(e.auditor(t, audit.Config{})))
	callers := map[string]map[string]any{
		"k-a":       {"subject": "alice", "authMethod": "jwt", "issuer": "https://a.example", "tenant": "t1"},
		"k-b":       {"subject": "alice", "authMethod": "jwt", "issuer": "https://b.example", "tenant": "t1"},
		"k-t2":      {"subject": "alice", "authMethod": "jwt", "issuer": "https://a.example", "tenant": "t2"},
		"k-iam":     {"subject": "alice", "authMethod": "iam", "issuer": "aws:iam", "tenant": "t1"},
		"k-a-again": {"subject": "alice", "authMethod": "jwt", "issuer": "https://a.example", "tenant": "t1"},
	}
	for id, c := range callers {
		invokeLambda(t, fn, callerEnvelope(t, id, c), "")
	}
	keys := map[string]string{}
	for id := range callers {
		keys[id] = str(e.item(t, id), "callerKey")
	}
	if keys["k-a"] != keys["k-a-again"] {
		t.Errorf("one principal, two keys: %q, %q", keys["k-a"], keys["k-a-again"])
	}
	for _, other := range []string{"k-b", "k-t2", "k-iam"} {
		if keys[other] == keys["k-a"] {
			t.Errorf("%s and k-a share the caller key %q", other, keys[other])
		}
	}
	if want := "jwt#https://a.example#t1#alice"; keys["k-a"] != want {
		t.Errorf("key %q, want %q", keys["k-a"], want)
	}
	if it := e.item(t, "k-b"); str(it, "callerIssuer") != "https://b.example" {
		t.Errorf("callerIssuer %q", str(it, "callerIssuer"))
	}

	a := e.auditor(t, audit.Config{})
	rows, err := a.CallerRows(t.Context(), audit.Caller{AuthMethod: "jwt", Issuer: "https://a.example", Tenant: "t1", Subject: "alice"}, audit.QueryOptions{})
	if err != nil || len(rows) != 2 {
		t.Fatalf("CallerRows: %d rows, %v", len(rows), err)
	}
	for _, r := range rows {
		if r.CallID != "k-a" && r.CallID != "k-a-again" {
			t.Errorf("another principal's row: %s", r.CallID)
		}
	}
}

func TestCallerKeyFormat(t *testing.T) {
	for _, tc := range []struct {
		c    audit.Caller
		want string
	}{
		{audit.Caller{AuthMethod: "jwt", Issuer: "https://i.example", Tenant: "acme", Subject: "user-7"}, "jwt#https://i.example#acme#user-7"},
		{audit.Caller{AuthMethod: "jwt", Subject: "auth0|123"}, "jwt###auth0|123"},
		{audit.Caller{AuthMethod: "jwt", Issuer: "https://i.example/#frag", Subject: "a#b%c"}, "jwt#https://i.example/%23frag##a%23b%25c"},
	} {
		got := tc.c.Key()
		if got != tc.want {
			t.Errorf("%+v.Key() = %q, want %q", tc.c, got, tc.want)
		}
		back, err := audit.ParseCallerKey(got)
		if err != nil || back != tc.c {
			t.Errorf("ParseCallerKey(%q) = %+v, %v", got, back, err)
		}
	}
	for _, bad := range []string{"", "user-7", "a#b#c", "a#b#c#d#e", "jwt#%zz##s"} {
		if _, err := audit.ParseCallerKey(bad); err == nil {
			t.Errorf("ParseCallerKey(%q) accepted", bad)
		}
	}
}
