package templatetest

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/taskstore"
)

// grants returns a function's inline policy statements as the set
// "action on resource", resources named by logical id (an index as
// "Table/index/name"). It fails the test on anything that is not an explicit
// Allow of named actions on named resources: a wildcard, a managed policy,
// a SAM policy template (whose grants the template does not show).
func grants(t *testing.T, id string, props map[string]any) map[string]bool {
	t.Helper()
	if _, ok := props["Role"]; ok {
		t.Errorf("%s: Role is set; give each function its own role through Policies", id)
	}
	out := map[string]bool{}
	for _, p := range list(props["Policies"]) {
		doc, ok := p.(map[string]any)
		if !ok || len(doc) != 1 || doc["Statement"] == nil {
			t.Errorf("%s: policy %v is not an inline {Statement: …} (managed policies and SAM policy templates grant more than the function uses)", id, p)
			continue
		}
		for _, s := range list(doc["Statement"]) {
			st, _ := s.(map[string]any)
			if st["Effect"] != "Allow" {
				t.Errorf("%s: statement effect %v", id, st["Effect"])
			}
			for _, key := range []string{"NotAction", "NotResource", "Principal"} {
				if _, ok := st[key]; ok {
					t.Errorf("%s: statement uses %s", id, key)
				}
			}
			// The conditions a grant may carry: dynamodb:LeadingKeys,
			// which confines it to the keys that start with a prefix, and
			// with it dynamodb:Attributes, which confines a write to the
			// attributes named.
			where := ""
			if c, ok := st["Condition"]; ok {
				var err error
				if where, err = keyCondition(c); err != nil {
					t.Errorf("%s: %v", id, err)
				}
			}
			var resources []string
			for _, r := range list(st["Resource"]) {
				name, err := resourceName(r)
				if err != nil {
					t.Errorf("%s: %v", id, err)
					continue
				}
				resources = append(resources, name)
			}
			for _, a := range list(st["Action"]) {
				action, _ := a.(string)
				if action == "" || strings.Contains(action, "*") {
					t.Errorf("%s: action %v: name every action, no wildcards", id, a)
					continue
				}
				for _, r := range resources {
					out[action+" on "+r+where] = true
				}
			}
		}
	}
	return out
}

var (
	subIndex = regexp.MustCompile(`^\$\{([A-Za-z0-9]+)\.Arn\}(/index/[A-Za-z0-9_.-]+)$`)
	// subKeys: the objects of a bucket under a literal key prefix, the one
	// wildcard at the end.
	subKeys = regexp.MustCompile(`^\$\{([A-Za-z0-9]+)\.Arn\}(/[A-Za-z0-9!_.'()/-]*\*)$`)
)

// resourceName names the resource an IAM statement's Resource entry points
// at: !GetAtt X.Arn → X, !Sub "${X.Arn}/index/i" → X/index/i, !Sub
// "${B.Arn}/p*" → B/p* (the objects of bucket B under the literal prefix p).
// Literal ARNs and any other wildcard are errors: every resource this
// stack's roles touch is in the stack. A Secrets Manager secret (a call key, the gateway's session
// key) has no Arn attribute: its !Ref is its ARN, so !Ref names it.
func resourceName(r any) (string, error) {
	if ga := getAtt(r); strings.HasSuffix(ga, ".Arn") {
		return strings.TrimSuffix(ga, ".Arn"), nil
	}
	if fn, arg := intrinsic(r); fn == "Ref" {
		if id, ok := arg.(string); ok && (strings.HasSuffix(id, "CallKey") || id == sessionKeyID) {
			return id, nil
		}
	}
	if fn, arg := intrinsic(r); fn == "Fn::Sub" {
		if s, ok := arg.(string); ok {
			if m := subIndex.FindStringSubmatch(s); m != nil {
				return m[1] + m[2], nil
			}
			if m := subKeys.FindStringSubmatch(s); m != nil {
				return m[1] + m[2], nil
			}
		}
	}
	return "", fmt.Errorf("resource %v: name a resource of this stack with !GetAtt X.Arn (or !Sub \"${X.Arn}/index/name\", !Sub \"${Bucket.Arn}/prefix*\"), never a wildcard or literal", r)
}

// auditGrant is what a tool function may do to the audit table: the adapter
// puts a row (conditionally) and completes a destructive tool's pending row;
// it never reads, deletes or scans, and it writes only its own tool's rows
// (keys "<tool>#<callId>"), so a compromised function cannot touch another
// tool's evidence.
func auditGrant(tool string) []string {
	where := " where key like " + tool + "#*"
	return []string{"dynamodb:PutItem on AuditTable" + where, "dynamodb:UpdateItem on AuditTable" + where}
}

// taskGrant is what a tool function may do to the tasks table (decision
// 0033): read the cancel markers ("cancel#…"), which only the gateway
// writes; and, for a tool that runs as a task, read its own tasks
// ("<tool>.<id>") and write their run attributes (taskstore.RunAttributes)
// — never create, delete or scan, never another tool's task, never a
// task's owner, tool, function, arguments or seal.
func taskGrant(tool string, tasks bool) []string {
	if !tasks {
		return []string{"dynamodb:GetItem on TasksTable where key like cancel#*"}
	}
	return []string{
		"dynamodb:GetItem on TasksTable where key like cancel#* " + tool + ".*",
		"dynamodb:UpdateItem on TasksTable where key like " + tool + ".* with attributes " + strings.Join(taskstore.RunAttributes, " "),
	}
}

// runsTasks: the declaration makes the tool a task.
func runsTasks(d adapter.Declaration) bool {
	return d.TaskSupport == adapter.TaskOptional || d.TaskSupport == adapter.TaskRequired
}

// keyCondition reads {"ForAllValues:StringLike": {"dynamodb:LeadingKeys":
// [p…]}}, optionally with {"ForAllValues:StringEquals":
// {"dynamodb:Attributes": [a…]}}, as " where key like p… [with attributes
// a…]"; any other condition is an error.
func keyCondition(c any) (string, error) {
	m, _ := c.(map[string]any)
	like, _ := m["ForAllValues:StringLike"].(map[string]any)
	keys := strs(list(like["dynamodb:LeadingKeys"]))
	attrs := []string(nil)
	n := 1
	if eq, ok := m["ForAllValues:StringEquals"].(map[string]any); ok {
		attrs = strs(list(eq["dynamodb:Attributes"]))
		if len(eq) != 1 || len(attrs) == 0 {
			return "", fmt.Errorf("condition %v: ForAllValues:StringEquals only on dynamodb:Attributes", c)
		}
		n++
	}
	if len(m) != n || len(like) != 1 || len(keys) == 0 {
		return "", fmt.Errorf("condition %v: only ForAllValues:StringLike on dynamodb:LeadingKeys (with ForAllValues:StringEquals on dynamodb:Attributes) is expected", c)
	}
	where := " where key like " + strings.Join(keys, " ")
	if attrs != nil {
		slices.Sort(attrs)
		where += " with attributes " + strings.Join(attrs, " ")
	}
	return where, nil
}

func strs(l []any) []string {
	out := make([]string, len(l))
	for i, v := range l {
		out[i] = fmt.Sprint(v)
	}
	return out
}

// payloadGrant is what a tool function may do in the payloads bucket: write
// and read its own results, read the arguments the gateway stored for it
// (by version) — under "<tool>/" only, so a compromised function can
// neither read nor overwrite another tool's payloads.
func payloadGrant(tool string) []string {
	results, args := " on PayloadsBucket/"+tool+"/results/*", " on PayloadsBucket/"+tool+"/args/*"
	return []string{"s3:PutObject" + results, "s3:GetObject" + results, "s3:GetObjectVersion" + results,
		"s3:GetObject" + args, "s3:GetObjectVersion" + args}
}

// ownKey is the grant that lets a role read the call key of function
// <name>Function.
func ownKey(name string) string { return "secretsmanager:GetSecretValue on " + name + "CallKey" }

// declaredGrants is what a tool's declaration says its handler calls, as
// grants: each declared action on the table, or on the index when the
// access names one, and on the bucket's objects under the declared prefix.
func declaredGrants(d adapter.Declaration) map[string]bool {
	out := map[string]bool{}
	for _, ta := range d.Tables {
		on := ta.Table
		if ta.Index != "" {
			on += "/index/" + ta.Index
		}
		for _, a := range ta.Actions {
			out["dynamodb:"+a+" on "+on] = true
		}
	}
	for _, b := range d.Buckets {
		for _, a := range b.Actions {
			out["s3:"+a+" on "+b.Bucket+"/"+b.Prefix+"*"] = true
		}
	}
	return out
}

// TestLeastPrivilege pins every role to exactly what mcpfn's rules and the
// tools' declarations give it, derived here from the catalog rather than
// read back from the template: a tool function (the gateway's
// MCPFN_TOOL_FUNCTIONS, checked against the catalog by
// TestEveryToolHasAFunction) gets the table actions its declaration names
// (handlers/iam_test.go holds the demo's declarations to its code), its own
// audit rows, its task runs and its own call key; the gateway and the
// interceptor get what every tool function implies.
func TestLeastPrivilege(t *testing.T) {
	rt := raw(t)
	var toolFunctions []string
	want := map[string]map[string]bool{}
	for _, e := range repoCatalog(t).Tools {
		toolFunctions = append(toolFunctions, e.Function)
		w := declaredGrants(e.Tool)
		for _, g := range slices.Concat(auditGrant(e.Tool.Name), taskGrant(e.Tool.Name, runsTasks(e.Tool)), payloadGrant(e.Tool.Name), []string{ownKey(strings.TrimSuffix(e.Function, "Function"))}) {
			w[g] = true
		}
		want[e.Function] = w
	}
	// The gateway writes the audit row of a call no function answered (a
	// throttle, a missing function, a timeout): one PutItem of its own
	// keys, never a read (TestOnlyTheGatewayWritesGatewayRows).
	gw := map[string]bool{"dynamodb:PutItem on AuditTable where key like " + audit.GatewayWriter + "#*": true}
	// It creates tasks, reads them for tasks/get, cancels and resumes
	// them, writes cancel markers and its slots of working tasks, whose
	// held tasks it reads in batches.
	for _, a := range []string{"GetItem", "PutItem", "UpdateItem", "BatchGetItem"} {
		gw["dynamodb:"+a+" on TasksTable"] = true
	}
	// It stores each tool's large arguments under that tool's args/, and
	// reads (to resolve and to presign) what each stored under results/.
	for _, e := range repoCatalog(t).Tools {
		n := e.Tool.Name
		gw["s3:PutObject on PayloadsBucket/"+n+"/args/*"] = true
		gw["s3:GetObject on PayloadsBucket/"+n+"/results/*"] = true
		gw["s3:GetObjectVersion on PayloadsBucket/"+n+"/results/*"] = true
	}
	for _, fn := range toolFunctions {
		gw["lambda:InvokeFunction on "+fn] = true
		// The gateway signs calls to every tool function: it reads each
		// one's key, and a function reads only its own (above).
		gw[ownKey(strings.TrimSuffix(fn, "Function"))] = true
	}
	// It MACs the session ids it mints with a key of its own.
	gw["secretsmanager:GetSecretValue on "+sessionKeyID] = true
	want["GatewayFunction"] = gw
	// The AgentCore interceptor signs for every tool function too, and
	// does nothing else.
	ic := map[string]bool{}
	for _, fn := range toolFunctions {
		ic[ownKey(strings.TrimSuffix(fn, "Function"))] = true
	}
	want["AgentCoreInterceptorFunction"] = ic

	for id, res := range rt.Resources(serverlessFunction) {
		w, ok := want[id]
		if !ok {
			t.Errorf("%s is neither a catalog tool's function nor mcpfn's: nothing says what its role may do", id)
			continue
		}
		got := grants(t, id, res.Properties)
		if !maps.Equal(got, w) {
			t.Errorf("%s grants\n  %v\nwant\n  %v", id, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(w)))
		}
	}
	for _, typ := range []string{"AWS::IAM::Role", "AWS::IAM::Policy"} {
		// AgentCoreGatewayRole is a service role, not a function's:
		// TestAgentCoreGatewayRole pins it.
		if ids := slices.DeleteFunc(rt.LogicalIDs(typ), func(id string) bool { return id == agentCoreRoleID }); len(ids) > 0 {
			t.Errorf("%s resources %v: this test does not check them; express grants as function Policies", typ, ids)
		}
	}
	if ids := rt.LogicalIDs("AWS::IAM::ManagedPolicy"); !slices.Equal(ids, []string{"McpCallerPolicy"}) {
		t.Errorf("managed policies %v: only McpCallerPolicy is checked (TestCallerPolicyOnlyViaTheURL)", ids)
	}
}

// TestCallerPolicyOnlyViaTheURL: the policy iam-mode callers get grants
// InvokeFunction on the gateway only with lambda:InvokedViaFunctionUrl, so it
// cannot be used to invoke the gateway directly with a made-up request
// context.
func TestCallerPolicyOnlyViaTheURL(t *testing.T) {
	res, ok := raw(t).Resource("McpCallerPolicy")
	if !ok {
		t.Fatal("no McpCallerPolicy")
	}
	doc, _ := res.Properties["PolicyDocument"].(map[string]any)
	got := map[string]string{}
	for _, s := range list(doc["Statement"]) {
		st, _ := s.(map[string]any)
		if st["Effect"] != "Allow" || getAtt(st["Resource"]) != "GatewayFunction.Arn" {
			t.Errorf("statement %v: want Allow on GatewayFunction.Arn only", st)
		}
		cond, _ := json.Marshal(st["Condition"])
		got[fmt.Sprint(st["Action"])] = string(cond)
	}
	want := map[string]string{
		"lambda:InvokeFunctionUrl": `{"StringEquals":{"lambda:FunctionUrlAuthType":"AWS_IAM"}}`,
		"lambda:InvokeFunction":    `{"Bool":{"lambda:InvokedViaFunctionUrl":"true"}}`,
	}
	if !maps.Equal(got, want) {
		t.Errorf("statements %v, want %v", got, want)
	}
}

// TestReadOnlyToolsCannotWrite derives the rule from the tools themselves, so
// it holds for tools added later: a tool annotated read-only gets no write
// action on any data table or bucket.
func TestReadOnlyToolsCannotWrite(t *testing.T) {
	rt := raw(t)
	forwards := gatewayToolFunctions(t)
	writes := []string{"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems", "PartiQLInsert", "PartiQLUpdate", "PartiQLDelete"}
	for _, e := range repoCatalog(t).Tools {
		if !e.Tool.ReadOnly {
			continue
		}
		res, ok := rt.Resource(forwards[e.Tool.Name])
		if !ok {
			t.Errorf("tool %s has no function", e.Tool.Name)
			continue
		}
		for g := range grants(t, res.LogicalID, res.Properties) {
			action, target, _ := strings.Cut(g, " on ")
			// The audit and tasks tables are mcpfn's records of the
			// calls (rows, task runs), not the tool's data.
			// Its payloads are its results, however large: the answer
			// it gives, not data it changes.
			if target == "AuditTable" || strings.HasPrefix(target, "AuditTable where ") || target == "TasksTable" || strings.HasPrefix(target, "TasksTable where ") ||
				target == "PayloadsBucket/"+e.Tool.Name+"/results/*" {
				continue
			}
			for _, w := range writes {
				if action == "dynamodb:"+w {
					t.Errorf("read-only tool %s may %s", e.Tool.Name, g)
				}
			}
			for _, w := range []string{"PutObject", "DeleteObject", "DeleteObjectVersion"} {
				if action == "s3:"+w {
					t.Errorf("read-only tool %s may %s", e.Tool.Name, g)
				}
			}
		}
	}
}

// TestInvokePermissions: each tool function's resource policy allows the
// gateway's role, the stack's AgentCore Gateway role (only with
// DeployAgentCoreGateway) and, only when AgentCoreGatewayRoleArn is set,
// that role; nothing else, and only lambda:InvokeFunction. The interceptor
// may be invoked by the stack's AgentCore Gateway role only.
func TestInvokePermissions(t *testing.T) {
	rt := raw(t)
	type grant struct{ principal, condition string }
	got := map[string][]grant{}
	for id, p := range rt.Resources("AWS::Lambda::Permission") {
		if p.Properties["Action"] != "lambda:InvokeFunction" {
			t.Errorf("%s: Action %v", id, p.Properties["Action"])
		}
		for _, key := range []string{"SourceArn", "SourceAccount", "FunctionUrlAuthType"} {
			if _, ok := p.Properties[key]; ok {
				t.Errorf("%s: unexpected %s", id, key)
			}
		}
		fn := strings.TrimSuffix(getAtt(p.Properties["FunctionName"]), ".Arn")
		if fn == "" {
			fn = ref(p.Properties["FunctionName"])
		}
		principal := getAtt(p.Properties["Principal"])
		if r := ref(p.Properties["Principal"]); r != "" {
			principal = "Ref:" + r
		} else if principal == "" {
			principal = fmt.Sprint(p.Properties["Principal"]) // a literal: never wanted
		}
		cond, _ := p.Attributes["Condition"].(string)
		got[fn] = append(got[fn], grant{principal, cond})
	}
	tools := gatewayToolFunctions(t)
	for _, fn := range tools {
		g := got[fn]
		want := []grant{{"GatewayFunctionRole.Arn", ""}, {agentCoreRoleID + ".Arn", agentCoreCondition}, {"Ref:AgentCoreGatewayRoleArn", "HasAgentCoreGateway"}}
		slices.SortFunc(g, func(a, b grant) int { return strings.Compare(a.condition, b.condition) })
		if !slices.Equal(g, want) {
			t.Errorf("%s invoke permissions %v, want %v", fn, g, want)
		}
		delete(got, fn)
	}
	// The stack's AgentCore Gateway invokes its interceptor.
	if g := got[agentCoreInterceptor]; !slices.Equal(g, []grant{{agentCoreRoleID + ".Arn", agentCoreCondition}}) {
		t.Errorf("%s invoke permissions %v, want only the AgentCore Gateway role's", agentCoreInterceptor, g)
	}
	delete(got, agentCoreInterceptor)
	for fn, g := range got {
		t.Errorf("permission on %s (%v), which is not a tool function", fn, g)
	}
}
