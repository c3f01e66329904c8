package templatetest

import (
	"slices"
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/audit"
)

// auditWriteActions are the DynamoDB actions that put or change an item.
var auditWriteActions = []string{"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems",
	"PartiQLInsert", "PartiQLUpdate", "PartiQLDelete"}

// auditKeyWriters returns, for each function of the template, the key
// patterns its role may write in the audit table ("*": any key, a grant
// without dynamodb:LeadingKeys).
func auditKeyWriters(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for id, res := range raw(t).Resources(serverlessFunction) {
		for g := range grants(t, id, res.Properties) {
			action, target, _ := strings.Cut(g, " on ")
			table, where, _ := strings.Cut(target, " where key like ")
			if table != "AuditTable" || !slices.Contains(auditWriteActions, strings.TrimPrefix(action, "dynamodb:")) {
				continue
			}
			if where == "" {
				where = "*"
			}
			if !slices.Contains(out[id], where) {
				out[id] = append(out[id], where)
			}
		}
	}
	return out
}

// stringLike is IAM's StringLike: * matches any run of characters (none
// included), ? one character, everything else itself, case-sensitively.
func stringLike(pattern, s string) bool {
	if pattern == "" {
		return s == ""
	}
	switch pattern[0] {
	case '*':
		for i := 0; i <= len(s); i++ {
			if stringLike(pattern[1:], s[i:]) {
				return true
			}
		}
		return false
	case '?':
		return s != "" && stringLike(pattern[1:], s[1:])
	}
	return s != "" && s[0] == pattern[0] && stringLike(pattern[1:], s[1:])
}

func TestStringLike(t *testing.T) {
	for _, c := range []struct {
		pattern, s string
		want       bool
	}{
		{"gateway#*", "gateway#c-1", true},
		{"gateway#*", "gateway#", true},
		{"gateway#*", "gateway_x#c-1", false},
		{"broadcast_get#*", "gateway#c-1", false},
		{"*", "gateway#c-1", true},
		{"gate?ay#*", "gateway#c", true},
		{"Gateway#*", "gateway#c", false},
	} {
		if got := stringLike(c.pattern, c.s); got != c.want {
			t.Errorf("stringLike(%q, %q) = %v", c.pattern, c.s, got)
		}
	}
}

// TestOnlyTheGatewayWritesGatewayRows: each writer owns its audit rows
// (docs/audit.md). The gateway's rows ("gateway#<callId>") may be written
// by the gateway's role alone — a tool role that could write them could
// overwrite or pre-empt the gateway's evidence of a call its function did
// not answer — and each tool's rows ("<tool>#<callId>") by its own
// function's role alone. Read from the template as text today: the local
// stack's IAM enforcement will run the same grants for real.
func TestOnlyTheGatewayWritesGatewayRows(t *testing.T) {
	writers := auditKeyWriters(t)
	mayWrite := func(key string) []string {
		var ids []string
		for id, patterns := range writers {
			if slices.ContainsFunc(patterns, func(p string) bool { return stringLike(p, key) }) {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids)
		return ids
	}
	const callID = "0123456789abcdef0123456789abcdef"
	if got := mayWrite(audit.RowKey(audit.GatewayWriter, callID)); !slices.Equal(got, []string{"GatewayFunction"}) {
		t.Errorf("roles that may write the gateway's row %s: %v, want GatewayFunction only", audit.RowKey(audit.GatewayWriter, callID), got)
	}
	if got := writers["GatewayFunction"]; !slices.Equal(got, []string{audit.GatewayWriter + "#*"}) {
		t.Errorf("the gateway may write audit keys %v, want only %s#*", got, audit.GatewayWriter)
	}
	for _, e := range repoCatalog(t).Tools {
		if e.Tool.Name == audit.GatewayWriter {
			t.Errorf("tool %q takes the gateway's audit key prefix", e.Tool.Name)
		}
		key := audit.RowKey(e.Tool.Name, callID)
		if got := mayWrite(key); !slices.Equal(got, []string{e.Function}) {
			t.Errorf("roles that may write %s's row %s: %v, want %s only", e.Tool.Name, key, got, e.Function)
		}
	}
}
