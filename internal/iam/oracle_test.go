package iam_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/internal/iam"
	"github.com/mcpfn/mcpfn/internal/samiam"
	"github.com/mcpfn/mcpfn/internal/samtemplate"
)

// The oracle: @cloud-copilot/iam-simulate, installed by `make deps` (npm ci
// in tools/node) with the Node 22 of the node package. AGPL-3.0: a test-time
// oracle only, never shipped nor installed for users.
const (
	nodeDir      = "tools/node"
	nodeBin      = nodeDir + "/node_modules/.bin/node"
	oracleScript = nodeDir + "/iam-oracle.mjs"
	oraclePkg    = nodeDir + "/node_modules/@cloud-copilot/iam-simulate/package.json"
)

const (
	account = "000000000000"
	region  = "us-east-1"
)

// multiValued are the condition keys whose values are sets; the oracle is
// given them as arrays, every other key as one string.
var multiValued = map[string]bool{"dynamodb:leadingkeys": true, "dynamodb:attributes": true}

// oracleCase is one request and the policies it is decided against, in the
// oracle's input shape.
type oracleCase struct {
	Name             string         `json:"-"`
	IdentityPolicies []any          `json:"identityPolicies"`
	ResourcePolicy   any            `json:"resourcePolicy"`
	Principal        string         `json:"principal"`
	Account          string         `json:"account"`
	Action           string         `json:"action"`
	Resource         string         `json:"resource"`
	Context          map[string]any `json:"context"`

	roleARN string
}

type oracleResult struct {
	Result  string   `json:"result"`
	Ignored []string `json:"ignored"`
	Error   string   `json:"error"`
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// runOracle decides every case with the oracle, or skips the test when
// `make deps` has not installed it — except in CI, where that fails.
func runOracle(t *testing.T, cases []oracleCase) []oracleResult {
	t.Helper()
	root := repoRoot(t)
	for _, p := range []string{nodeBin, oracleScript, oraclePkg} {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			msg := fmt.Sprintf("%s is missing: run `make deps` (npm ci in tools/node) to install the IAM oracle", p)
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	in, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), filepath.Join(root, nodeBin), filepath.Join(root, oracleScript))
	cmd.Dir = filepath.Join(root, nodeDir)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the oracle failed: %v\n%s", err, stderr.String())
	}
	var res []oracleResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("the oracle's output: %v\n%.2000s", err, out)
	}
	if len(res) != len(cases) {
		t.Fatalf("the oracle answered %d cases of %d", len(res), len(cases))
	}
	return res
}

// decide runs the case through internal/iam.
func decide(c oracleCase) (iam.Decision, error) {
	var ids []*iam.Policy
	for i, doc := range c.IdentityPolicies {
		p, err := iam.ParsePolicy(fmt.Sprintf("identity%d", i), iam.IdentityBased, doc)
		if err != nil {
			return iam.Decision{}, err
		}
		ids = append(ids, p)
	}
	var res *iam.Policy
	if c.ResourcePolicy != nil {
		var err error
		if res, err = iam.ParsePolicy("resource", iam.ResourceBased, c.ResourcePolicy); err != nil {
			return iam.Decision{}, err
		}
	}
	ctx := iam.Context{}
	for k, v := range c.Context {
		switch x := v.(type) {
		case string:
			ctx.Set(k, x)
		case []string:
			ctx.Set(k, x...)
		}
	}
	p := iam.Principal{ARN: c.Principal, IAMARN: c.roleARN, Account: c.Account}
	return iam.Evaluate(iam.Request{Principal: p, Action: c.Action, Resource: c.Resource, Context: ctx}, ids, res), nil
}

// compare requires the oracle's decision for every case.
func compare(t *testing.T, cases []oracleCase) {
	t.Helper()
	res := runOracle(t, cases)
	var bad []string
	for i, c := range cases {
		r := res[i]
		desc := func() string {
			if len(bad) > 0 && os.Getenv("IAM_ORACLE_VERBOSE") == "" {
				return fmt.Sprintf("case %d %s (%s on %s, context %v)", i, c.Name, c.Action, c.Resource, c.Context)
			}
			b, _ := json.MarshalIndent(c, "  ", "  ")
			return fmt.Sprintf("case %d %s:\n  %s", i, c.Name, b)
		}
		if r.Error != "" {
			bad = append(bad, fmt.Sprintf("%s\n  the oracle refused it: %s", desc(), r.Error))
			continue
		}
		if len(r.Ignored) > 0 {
			bad = append(bad, fmt.Sprintf("%s\n  the oracle ignored context keys %v (a case must use keys valid for its action)", desc(), r.Ignored))
			continue
		}
		d, err := decide(c)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s\n  internal/iam refused it: %v", desc(), err))
			continue
		}
		if d.Result.String() != r.Result {
			bad = append(bad, fmt.Sprintf("%s\n  internal/iam: %s (%s), oracle: %s", desc(), d.Result, d.Statement, r.Result))
		}
		if len(bad) >= 40 {
			break
		}
	}
	if len(bad) > 0 {
		t.Fatalf("%d+ of %d cases decided differently from the oracle:\n%s", len(bad), len(cases), strings.Join(bad, "\n"))
	}
	t.Logf("%d cases, every decision identical to the oracle's", len(cases))
}

func stmt(effect string, action, resource any, cond map[string]any) map[string]any {
	s := map[string]any{"Effect": effect, "Action": action, "Resource": resource}
	if cond != nil {
		s["Condition"] = cond
	}
	return s
}

func doc(stmts ...map[string]any) map[string]any {
	l := make([]any, len(stmts))
	for i, s := range stmts {
		l[i] = s
	}
	return map[string]any{"Version": "2012-10-17", "Statement": l}
}

func roleSession(role string) (session, roleARN string) {
	return "arn:aws:sts::" + account + ":assumed-role/" + role + "/" + role + "-session", "arn:aws:iam::" + account + ":role/" + role
}

// newCase is a request by role's session with the global keys the local
// stack supplies.
func newCase(name, role, action, resource string, ctx map[string]any, identity []any, resourcePolicy any) oracleCase {
	session, roleARN := roleSession(role)
	c := map[string]any{
		"aws:PrincipalArn": roleARN, "aws:PrincipalAccount": account,
		"aws:PrincipalType": "AssumedRole", "aws:RequestedRegion": region,
	}
	for k, v := range ctx {
		c[k] = v
	}
	return oracleCase{Name: name, IdentityPolicies: identity, ResourcePolicy: resourcePolicy, Principal: session, Account: account,
		Action: action, Resource: resource, Context: c, roleARN: roleARN}
}

const (
	auditARN  = "arn:aws:dynamodb:" + region + ":" + account + ":table/AuditTable"
	tasksARN  = "arn:aws:dynamodb:" + region + ":" + account + ":table/TasksTable"
	indexARN  = "arn:aws:dynamodb:" + region + ":" + account + ":table/BroadcastsTable/index/byChannel"
	tableARN  = "arn:aws:dynamodb:" + region + ":" + account + ":table/BroadcastsTable"
	secretARN = "arn:aws:secretsmanager:" + region + ":" + account + ":secret:BroadcastGetCallKey"
	fnARN     = "arn:aws:lambda:" + region + ":" + account + ":function:BroadcastGetFunction"
)

// TestActionsAndResourcesAgreeWithTheOracle: wildcards in actions and ARNs,
// case, NotAction and NotResource, explicit deny over allow.
func TestActionsAndResourcesAgreeWithTheOracle(t *testing.T) {
	actionPatterns := []any{"dynamodb:GetItem", "dynamodb:*", "dynamodb:Get*", "dynamodb:?etItem", "*", "DynamoDB:getitem",
		"dynamodb:*Item", "dynamodb:PutItem", []any{"dynamodb:PutItem", "dynamodb:GetItem"}, "s3:GetObject", "dynamodb:Get?tem", "dynamodb:G*m"}
	resourcePatterns := []any{tableARN, "*", "arn:aws:dynamodb:*:*:table/Broadcasts*", "arn:aws:dynamodb:" + region + ":" + account + ":table/*",
		"arn:aws:dynamodb:*:*:table/BroadcastsTable", "arn:aws:dynamodb:*:" + account + ":table/Broadcasts?able", "arn:aws:dynamodb:*:*:*",
		"arn:aws:dynamodb:us-*:*:table/BroadcastsTable", "arn:aws:dynamodb:*:*:table/broadcaststable", "arn:aws:dynamodb:*:*:table/BroadcastsTable/*",
		tableARN + "/index/*", indexARN, "arn:aws:*:*:*:table/BroadcastsTable", "arn:aws:dynamodb:*:111111111111:table/*"}
	requests := []struct{ action, resource string }{
		{"dynamodb:GetItem", tableARN}, {"dynamodb:PutItem", tableARN}, {"dynamodb:Query", indexARN}, {"dynamodb:Query", tableARN},
		{"dynamodb:DeleteItem", auditARN},
	}
	var cases []oracleCase
	for ai, a := range actionPatterns {
		for ri, r := range resourcePatterns {
			for qi, q := range requests {
				name := fmt.Sprintf("allow a%d r%d q%d", ai, ri, qi)
				cases = append(cases, newCase(name, "R", q.action, q.resource, nil, []any{doc(stmt("Allow", a, r, nil))}, nil))
			}
		}
	}
	// NotAction / NotResource, and deny over allow.
	for qi, q := range requests {
		cases = append(cases,
			newCase(fmt.Sprintf("notaction q%d", qi), "R", q.action, q.resource, nil, []any{doc(map[string]any{"Effect": "Allow", "NotAction": "dynamodb:PutItem", "Resource": "*"})}, nil),
			newCase(fmt.Sprintf("notresource q%d", qi), "R", q.action, q.resource, nil, []any{doc(map[string]any{"Effect": "Allow", "Action": "dynamodb:*", "NotResource": auditARN})}, nil),
			newCase(fmt.Sprintf("deny wins q%d", qi), "R", q.action, q.resource, nil, []any{
				doc(stmt("Allow", "*", "*", nil)),
				doc(stmt("Deny", "dynamodb:*Item", "arn:aws:dynamodb:*:*:table/BroadcastsTable", nil)),
			}, nil),
			newCase(fmt.Sprintf("deny in same policy q%d", qi), "R", q.action, q.resource, nil, []any{
				doc(stmt("Deny", "dynamodb:PutItem", "*", nil), stmt("Allow", "dynamodb:*", "*", nil)),
			}, nil),
			newCase(fmt.Sprintf("no policy q%d", qi), "R", q.action, q.resource, nil, nil, nil),
		)
	}
	// S3 object ARNs: no region or account, the key (slashes and all) in
	// the resource part, prefixes and wildcards across "/".
	objARN := "arn:aws:s3:::payloadsbucket/broadcast_get/results/c1/a1"
	for i, r := range []string{objARN, "arn:aws:s3:::payloadsbucket/*", "arn:aws:s3:::payloadsbucket/broadcast_get/results/*",
		"arn:aws:s3:::payloadsbucket/broadcast_get/*", "arn:aws:s3:::payloadsbucket/*/results/*", "arn:aws:s3:::payloadsbucket",
		"arn:aws:s3:::payloadsbucket/broadcast_?et/results/*", "arn:aws:s3:::*/broadcast_get/results/*", "arn:aws:s3:::payloadsbucket/broadcast_get/args/*",
		"arn:aws:s3:::PayloadsBucket/*"} {
		for j, res := range []string{objARN, "arn:aws:s3:::payloadsbucket/broadcast_list/results/c1", "arn:aws:s3:::payloadsbucket/broadcast_get/args/c1"} {
			for _, a := range []string{"s3:GetObject", "s3:PutObject", "s3:GetObjectVersion"} {
				cases = append(cases, newCase(fmt.Sprintf("s3 r%d q%d %s", i, j, a), "R", a, res, nil,
					[]any{doc(stmt("Allow", []any{"s3:GetObject", "s3:PutObject", "s3:ListBucket"}, r, nil))}, nil))
			}
		}
		cases = append(cases, newCase(fmt.Sprintf("s3 r%d bucket", i), "R", "s3:ListBucket", "arn:aws:s3:::payloadsbucket", nil,
			[]any{doc(stmt("Allow", []any{"s3:GetObject", "s3:PutObject", "s3:ListBucket"}, r, nil))}, nil))
	}
	// Lambda function ARNs: qualified, unqualified, wildcards.
	for i, r := range []string{fnARN, "arn:aws:lambda:*:*:function:*", "arn:aws:lambda:*:*:function:Broadcast*", fnARN + ":*", "arn:aws:lambda:" + region + ":" + account + ":function:*Function"} {
		for j, res := range []string{fnARN, fnARN + ":live", "arn:aws:lambda:" + region + ":" + account + ":function:Other"} {
			cases = append(cases, newCase(fmt.Sprintf("lambda r%d q%d", i, j), "R", "lambda:InvokeFunction", res, nil, []any{doc(stmt("Allow", "lambda:InvokeFunction", r, nil))}, nil))
		}
	}
	compare(t, cases)
}

// TestConditionsAgreeWithTheOracle: every operator the evaluator supports,
// with IfExists and the set operators, on keys present, absent, empty and
// with several values, with one and several policy values.
func TestConditionsAgreeWithTheOracle(t *testing.T) {
	type keyCase struct {
		key      string
		patterns [][]string     // policy values
		requests map[string]any // name → request value (nil: absent)
		action   string         // an action the key is valid for
		resource string
	}
	keys := []keyCase{
		{key: "dynamodb:LeadingKeys", action: "dynamodb:PutItem", resource: auditARN,
			patterns: [][]string{{"broadcast_get#*"}, {"broadcast_get#*", "broadcast_list#*"}, {"broadcast_get#abc"}, {"*"}, {"Broadcast_Get#*"}, {"broadcast_?et#*"}},
			requests: map[string]any{"absent": nil, "empty": []string{}, "own": []string{"broadcast_get#abc"}, "other": []string{"broadcast_create#x"},
				"mixed": []string{"broadcast_get#1", "broadcast_create#2"}, "both own": []string{"broadcast_get#1", "broadcast_list#2"}, "case": []string{"BROADCAST_GET#abc"}}},
		{key: "dynamodb:Attributes", action: "dynamodb:UpdateItem", resource: tasksARN,
			patterns: [][]string{{"taskId", "status", "result"}, {"status"}, {"st*"}},
			requests: map[string]any{"absent": nil, "subset": []string{"taskId", "status"}, "outside": []string{"taskId", "owner"}, "one": []string{"status"}}},
		{key: "dynamodb:Select", action: "dynamodb:Query", resource: indexARN,
			patterns: [][]string{{"SPECIFIC_ATTRIBUTES"}, {"COUNT", "SPECIFIC_ATTRIBUTES"}, {"*_ATTRIBUTES"}},
			requests: map[string]any{"absent": nil, "specific": "SPECIFIC_ATTRIBUTES", "all": "ALL_ATTRIBUTES"}},
		{key: "dynamodb:ReturnValues", action: "dynamodb:UpdateItem", resource: tasksARN,
			patterns: [][]string{{"NONE"}, {"NONE", "UPDATED_NEW"}, {"none"}},
			requests: map[string]any{"absent": nil, "none": "NONE", "allold": "ALL_OLD"}},
		{key: "aws:PrincipalArn", action: "secretsmanager:GetSecretValue", resource: secretARN,
			patterns: [][]string{{"arn:aws:iam::" + account + ":role/R"}, {"arn:aws:iam::" + account + ":role/R", "arn:aws:iam::" + account + ":role/Gateway"},
				{"arn:aws:iam::*:role/R*"}, {"arn:aws:iam::" + account + ":role/r"}},
			requests: map[string]any{"self": "given"}},
	}
	ops := []string{"StringEquals", "StringNotEquals", "StringEqualsIgnoreCase", "StringNotEqualsIgnoreCase", "StringLike", "StringNotLike"}
	arnOps := []string{"ArnEquals", "ArnLike", "ArnNotEquals", "ArnNotLike"}
	var cases []oracleCase
	for _, k := range keys {
		var opsHere []string
		for _, op := range ops {
			// Set operators on the multivalued keys, plain ones on the
			// others (internal/iam refuses the mixes:
			// TestMixingSetAndSingleValuedIsRefused).
			if multiValued[strings.ToLower(k.key)] {
				opsHere = append(opsHere, "ForAllValues:"+op, "ForAnyValue:"+op, "ForAllValues:"+op+"IfExists", "ForAnyValue:"+op+"IfExists")
			} else {
				opsHere = append(opsHere, op, op+"IfExists")
			}
		}
		if k.key == "aws:PrincipalArn" {
			for _, op := range arnOps {
				opsHere = append(opsHere, op, op+"IfExists")
			}
		}
		opsHere = append(opsHere, "Null")
		for _, op := range opsHere {
			pats := k.patterns
			if op == "Null" {
				pats = [][]string{{"true"}, {"false"}}
			}
			for pi, pat := range pats {
				for _, rname := range sortedNames(k.requests) {
					for _, effect := range []string{"Allow", "Deny"} {
						ctx := map[string]any{}
						roles := []string{"R"}
						if rv := k.requests[rname]; rv != nil && rv != "given" {
							ctx[k.key] = rv
						}
						if k.key == "aws:PrincipalArn" {
							roles = []string{"R", "Gateway", "Other"}
						}
						for _, role := range roles {
							cond := map[string]any{op: map[string]any{k.key: toAny(pat)}}
							ids := []any{doc(stmt(effect, k.action, k.resource, cond))}
							if effect == "Deny" {
								ids = append(ids, doc(stmt("Allow", "*", "*", nil)))
							}
							name := fmt.Sprintf("%s %s %v %s %s as %s", effect, op, pat, k.key, rname, role)
							_ = pi
							cases = append(cases, newCase(name, role, k.action, k.resource, ctx, ids, nil))
						}
					}
				}
			}
		}
	}
	// Bool.
	for _, v := range []string{"true", "false", "TRUE"} {
		for _, rv := range []any{nil, "true", "false"} {
			for _, op := range []string{"Bool", "BoolIfExists"} {
				ctx := map[string]any{}
				if rv != nil {
					ctx["aws:SecureTransport"] = rv
				}
				cases = append(cases, newCase(fmt.Sprintf("%s %s secure=%v", op, v, rv), "R", "dynamodb:GetItem", tableARN, ctx,
					[]any{doc(stmt("Allow", "dynamodb:GetItem", tableARN, map[string]any{op: map[string]any{"aws:SecureTransport": v}}))}, nil))
			}
		}
	}
	// Several keys under one operator, several operators: AND.
	for _, lk := range [][]string{{"broadcast_get#1"}, {"x#1"}} {
		for _, at := range [][]string{{"rowKey", "status"}, {"rowKey", "secret"}} {
			ctx := map[string]any{"dynamodb:LeadingKeys": lk, "dynamodb:Attributes": at, "dynamodb:ReturnValues": "NONE"}
			cond := map[string]any{
				"ForAllValues:StringLike":   map[string]any{"dynamodb:LeadingKeys": []any{"broadcast_get#*"}, "dynamodb:Attributes": []any{"rowKey", "status"}},
				"StringEqualsIfExists":      map[string]any{"dynamodb:ReturnValues": "NONE"},
				"ForAnyValue:StringEquals":  map[string]any{"dynamodb:Attributes": "rowKey"},
				"ForAllValues:StringEquals": map[string]any{"dynamodb:Attributes": []any{"rowKey", "status", "secret"}},
			}
			cases = append(cases, newCase(fmt.Sprintf("and %v %v", lk, at), "R", "dynamodb:UpdateItem", auditARN, ctx,
				[]any{doc(stmt("Allow", "dynamodb:UpdateItem", auditARN, cond))}, nil))
		}
	}
	compare(t, cases)
}

// TestResourcePoliciesAgreeWithTheOracle: principals of resource policies,
// the same-account rule (either policy allows), and the call keys' policy:
// Deny to everyone but a list of roles, whatever their identity grants.
func TestResourcePoliciesAgreeWithTheOracle(t *testing.T) {
	_, rRole := roleSession("R")
	_, gwRole := roleSession("Gateway")
	rSession, _ := roleSession("R")
	principals := []any{"*", map[string]any{"AWS": "*"}, map[string]any{"AWS": rRole}, map[string]any{"AWS": gwRole},
		map[string]any{"AWS": account}, map[string]any{"AWS": "arn:aws:iam::" + account + ":root"}, map[string]any{"AWS": rSession},
		map[string]any{"Service": "lambda.amazonaws.com"}, map[string]any{"AWS": []any{gwRole, rRole}}, map[string]any{"AWS": "111111111111"}}
	identities := map[string][]any{
		"none":   nil,
		"allow":  {doc(stmt("Allow", "secretsmanager:GetSecretValue", secretARN, nil))},
		"other":  {doc(stmt("Allow", "secretsmanager:GetSecretValue", "arn:aws:secretsmanager:*:*:secret:Other*", nil))},
		"deny":   {doc(stmt("Deny", "secretsmanager:*", "*", nil), stmt("Allow", "*", "*", nil))},
		"broad":  {doc(stmt("Allow", "*", "*", nil))},
		"lambda": {doc(stmt("Allow", "lambda:InvokeFunction", fnARN, nil))},
	}
	var cases []oracleCase
	for pi, pr := range principals {
		for _, effect := range []string{"Allow", "Deny"} {
			rp := map[string]any{"Version": "2012-10-17", "Statement": []any{map[string]any{
				"Effect": effect, "Principal": pr, "Action": "secretsmanager:GetSecretValue", "Resource": "*"}}}
			for _, idName := range sortedNames(identities) {
				for _, role := range []string{"R", "Gateway"} {
					cases = append(cases, newCase(fmt.Sprintf("p%d %s identity %s as %s", pi, effect, idName, role), role,
						"secretsmanager:GetSecretValue", secretARN, nil, identities[idName], rp))
				}
			}
			// A function's resource policy, as AWS::Lambda::Permission makes it.
			lp := map[string]any{"Version": "2012-10-17", "Statement": []any{map[string]any{
				"Effect": effect, "Principal": pr, "Action": "lambda:InvokeFunction", "Resource": fnARN}}}
			for _, idName := range []string{"none", "lambda", "broad"} {
				for _, role := range []string{"R", "Gateway"} {
					cases = append(cases, newCase(fmt.Sprintf("lambda p%d %s identity %s as %s", pi, effect, idName, role), role,
						"lambda:InvokeFunction", fnARN, nil, identities[idName], lp))
				}
			}
		}
	}
	// The call key's policy, as template.yaml declares it.
	keyPolicy := map[string]any{"Version": "2012-10-17", "Statement": []any{map[string]any{
		"Sid": "OnlyTheFunctionAndItsSigners", "Effect": "Deny", "Principal": "*", "Action": "secretsmanager:GetSecretValue", "Resource": "*",
		"Condition": map[string]any{"StringNotEquals": map[string]any{"aws:PrincipalArn": []any{rRole, gwRole}}}}}}
	for _, role := range []string{"R", "Gateway", "Other"} {
		for _, idName := range sortedNames(identities) {
			cases = append(cases, newCase("key policy identity "+idName+" as "+role, role, "secretsmanager:GetSecretValue", secretARN, nil, identities[idName], keyPolicy))
		}
	}
	compare(t, cases)
}

func toAny(l []string) any {
	if len(l) == 1 {
		return l[0]
	}
	out := make([]any, len(l))
	for i, s := range l {
		out[i] = s
	}
	return out
}

func sortedNames[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// TestTheTemplatesPoliciesAgreeWithTheOracle: every role of template.yaml,
// as internal/samiam derives it (with SAM's own policies), making every
// request the stack's functions make and the ones an attacker would, on
// every table, key and function of the template.
func TestTheTemplatesPoliciesAgreeWithTheOracle(t *testing.T) {
	tmpl, err := samtemplate.LoadRepo()
	if err != nil {
		t.Fatal(err)
	}
	m, err := samiam.Derive(tmpl, samiam.LocalValues(tmpl, account, region, map[string]bool{"DeployAgentCore": true}), account)
	if err != nil {
		t.Fatal(err)
	}
	type req struct {
		action, resource string
		ctx              map[string]any
	}
	var reqs []req
	tables := tmpl.LogicalIDs("AWS::DynamoDB::Table")
	var tools []string
	for _, id := range tmpl.LogicalIDs("AWS::Serverless::Function") {
		if strings.HasPrefix(id, "Broadcast") {
			tools = append(tools, id)
		}
	}
	for _, tbl := range tables {
		arn := "arn:aws:dynamodb:" + region + ":" + account + ":table/" + tbl
		for _, action := range []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"} {
			reqs = append(reqs,
				req{action, arn, map[string]any{"dynamodb:LeadingKeys": []string{"broadcast_get#c1"}, "dynamodb:Attributes": []string{"rowKey", "tool"}}},
				req{action, arn, map[string]any{"dynamodb:LeadingKeys": []string{"broadcast_create#c1"}}},
				req{action, arn, map[string]any{"dynamodb:LeadingKeys": []string{"gateway#c1"}}},
				req{action, arn, map[string]any{"dynamodb:LeadingKeys": []string{"cancel#x"}}})
		}
		reqs = append(reqs, req{"dynamodb:UpdateItem", arn, map[string]any{"dynamodb:LeadingKeys": []string{"broadcast_get#c2"}, "dynamodb:ReturnValues": "ALL_OLD"}},
			req{"dynamodb:Scan", arn, nil}, req{"dynamodb:Query", arn + "/index/byChannel", map[string]any{"dynamodb:Select": "ALL_ATTRIBUTES"}},
			req{"dynamodb:Query", arn, map[string]any{"dynamodb:LeadingKeys": []string{"broadcast_list#1"}}})
	}
	for _, fn := range tools {
		secret := "arn:aws:secretsmanager:" + region + ":" + account + ":secret:" + strings.TrimSuffix(fn, "Function") + "CallKey"
		reqs = append(reqs, req{"secretsmanager:GetSecretValue", secret, map[string]any{"secretsmanager:VersionStage": "AWSCURRENT"}},
			req{"secretsmanager:PutSecretValue", secret, nil},
			req{"lambda:InvokeFunction", "arn:aws:lambda:" + region + ":" + account + ":function:" + fn, nil})
	}
	// The payloads bucket: every tool's prefixes, over TLS and not, and
	// the bucket itself.
	for _, id := range tmpl.LogicalIDs("AWS::S3::Bucket") {
		bucket := samiam.BucketARN(samiam.BucketName(id))
		reqs = append(reqs, req{"s3:ListBucket", bucket, map[string]any{"aws:SecureTransport": "true"}})
		for _, fn := range tools {
			tool := toolName(fn)
			for _, kind := range []string{"results", "args"} {
				obj := bucket + "/" + tool + "/" + kind + "/c1/a1"
				for _, action := range []string{"s3:GetObject", "s3:GetObjectVersion", "s3:PutObject", "s3:DeleteObject"} {
					for _, tls := range []string{"true", "false"} {
						reqs = append(reqs, req{action, obj, map[string]any{"aws:SecureTransport": tls}})
					}
				}
			}
		}
	}
	reqs = append(reqs, req{"lambda:InvokeFunction", "arn:aws:lambda:" + region + ":" + account + ":function:AgentCoreInterceptorFunction", nil},
		req{"logs:PutLogEvents", "arn:aws:logs:" + region + ":" + account + ":log-group:/aws/lambda/X:log-stream:s", nil},
		req{"xray:PutTraceSegments", "*", nil})
	var cases []oracleCase
	for _, roleID := range sortedNames(m.Roles) {
		role := m.Roles[roleID]
		var ids []any
		for _, p := range role.Policies {
			ids = append(ids, policyJSON(p))
		}
		for _, r := range reqs {
			var rp any
			if p := m.ResourcePolicies[iam.PolicyResource(r.resource)]; p != nil {
				rp = policyJSON(p)
			}
			cases = append(cases, newCase(roleID+" "+r.action+" "+r.resource, roleID, r.action, r.resource, r.ctx, ids, rp))
		}
	}
	compare(t, cases)
}

// toolName is the tool a tool function of the demo serves:
// BroadcastGetFunction → broadcast_get.
func toolName(fn string) string {
	var b strings.Builder
	for i, r := range strings.TrimSuffix(fn, "Function") {
		if 'A' <= r && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// policyJSON writes a parsed policy back as a document, for the oracle.
func policyJSON(p *iam.Policy) map[string]any {
	var stmts []any
	for _, st := range p.Statements {
		s := map[string]any{"Effect": string(st.Effect)}
		if st.Sid != "" {
			s["Sid"] = st.Sid
		}
		if st.NotAction {
			s["NotAction"] = st.Actions
		} else {
			s["Action"] = st.Actions
		}
		if st.NotResource {
			s["NotResource"] = st.Resources
		} else {
			s["Resource"] = st.Resources
		}
		if pr := st.Principal; pr != nil {
			if pr.Any {
				s["Principal"] = "*"
			} else {
				m := map[string]any{}
				if len(pr.AWS) > 0 {
					m["AWS"] = pr.AWS
				}
				if len(pr.Service) > 0 {
					m["Service"] = pr.Service
				}
				s["Principal"] = m
			}
		}
		if len(st.Conditions) > 0 {
			cond := map[string]any{}
			for _, c := range st.Conditions {
				op, _ := cond[c.Operator].(map[string]any)
				if op == nil {
					op = map[string]any{}
					cond[c.Operator] = op
				}
				op[c.Key] = c.Values
			}
			s["Condition"] = cond
		}
		stmts = append(stmts, s)
	}
	return map[string]any{"Version": "2012-10-17", "Statement": stmts}
}
