package main

import (
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cedar-policy/cedar-go"
)

const gatewayARN = "arn:aws:bedrock-agentcore:us-east-1:123456789012:gateway/mcpfn-abc"

// TestDemoCatalogPolicies runs `mcpfn agentcore-policies` in this repository
// (the demo's catalog, mcpfn-tools.json), parses the policies with Cedar and
// asks them what AgentCore's policy engine would: broadcast_delete only for
// callers whose scope claim holds broadcasts:write as a whole word, the
// other tools for any OAuth caller, nothing for anyone else or any other
// gateway.
func TestAgentCorePoliciesOfTheDemoCatalog(t *testing.T) {
	out := filepath.Join(t.TempDir(), "policies.cedar")
	if code := run(t.Context(), []string{"agentcore-policies", "-o", out, "-gateway-arn", gatewayARN}, nil, io.Discard, os.Stderr); code != 0 {
		t.Fatalf("exit %d", code)
	}
	tools, err := projectTools()
	if err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := cedar.NewPolicySetFromBytes("policies.cedar", text)
	if err != nil {
		t.Fatalf("not Cedar: %v\n%s", err, text)
	}
	if n := len(maps.Collect(ps.All())); n != len(tools) {
		t.Fatalf("%d policies for %d tools", n, len(tools))
	}
	if !strings.Contains(string(text), `action == AgentCore::Action::"broadcast-delete___broadcast_delete"`) {
		t.Fatalf("no action for broadcast_delete:\n%s", text)
	}

	gw := cedar.NewEntityUID("AgentCore::Gateway", cedar.String(gatewayARN))
	user := func(scope *string) (cedar.EntityUID, cedar.EntityMap) {
		uid := cedar.NewEntityUID("AgentCore::OAuthUser", "alice")
		tags := cedar.RecordMap{"username": cedar.String("alice")}
		if scope != nil {
			tags["scope"] = cedar.String(*scope)
		}
		return uid, cedar.EntityMap{uid: cedar.Entity{UID: uid, Tags: cedar.NewRecord(tags)}}
	}
	allowed := func(principal cedar.EntityUID, entities cedar.EntityMap, tool string, resource cedar.EntityUID) bool {
		d, _ := cedar.Authorize(ps, entities, cedar.Request{
			Principal: principal,
			Action:    cedar.NewEntityUID("AgentCore::Action", cedar.String(strings.ReplaceAll(tool, "_", "-")+"___"+tool)),
			Resource:  resource,
			Context:   cedar.NewRecord(cedar.RecordMap{}),
		})
		return d == cedar.Allow
	}
	s := func(v string) *string { return &v }
	for _, tc := range []struct {
		name   string
		scope  *string
		delete bool
	}{
		{"only the scope", s("broadcasts:write"), true},
		{"scope first", s("broadcasts:write openid"), true},
		{"scope last", s("openid broadcasts:write"), true},
		{"scope in the middle", s("openid broadcasts:write profile"), true},
		{"another scope", s("broadcasts:read"), false},
		{"a longer scope", s("broadcasts:writer"), false},
		{"a scope containing it", s("x-broadcasts:write"), false},
		{"no scope claim", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, ents := user(tc.scope)
			if got := allowed(p, ents, "broadcast_delete", gw); got != tc.delete {
				t.Fatalf("broadcast_delete allowed = %v, want %v", got, tc.delete)
			}
			for _, tool := range []string{"broadcast_create", "broadcast_get", "broadcast_list"} {
				if !allowed(p, ents, tool, gw) {
					t.Fatalf("%s denied", tool)
				}
			}
		})
	}
	p, ents := user(s("broadcasts:write"))
	if allowed(p, ents, "broadcast_get", cedar.NewEntityUID("AgentCore::Gateway", "arn:aws:bedrock-agentcore:us-east-1:123456789012:gateway/other")) {
		t.Fatal("allowed on another gateway")
	}
	iam := cedar.NewEntityUID("AgentCore::IamEntity", "arn:aws:iam::123456789012:role/x")
	if allowed(iam, cedar.EntityMap{}, "broadcast_get", gw) {
		t.Fatal("an IAM principal was allowed")
	}
}
