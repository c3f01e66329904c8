package templatetest

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/mcpfn/mcpfn/agentcore"
	"github.com/mcpfn/mcpfn/calltoken"
	"github.com/mcpfn/mcpfn/gateway"
	"github.com/mcpfn/mcpfn/internal/samtemplate"
)

// The AgentCore Gateway resources are read from the raw template (with
// intrinsics intact).
const (
	agentCoreCondition   = "DeployAgentCore"
	agentCoreGatewayID   = "AgentCoreGateway"
	agentCoreRoleID      = "AgentCoreGatewayRole"
	agentCoreInterceptor = "AgentCoreInterceptorFunction"
	typeAgentCoreGateway = "AWS::BedrockAgentCore::Gateway"
	typeAgentCoreTarget  = "AWS::BedrockAgentCore::GatewayTarget"
)

func conditionOf(r samtemplate.Resource) string {
	c, _ := r.Attributes["Condition"].(string)
	return c
}

// TestAgentCoreIsOptIn: the parameter defaults to "false" and every
// AgentCore resource (gateway, targets, interceptor, role, permissions)
// exists only under its condition.
func TestAgentCoreIsOptIn(t *testing.T) {
	rt := raw(t)
	if d, _ := rt.ParameterDefault("DeployAgentCoreGateway"); d != "false" {
		t.Errorf("DeployAgentCoreGateway default %v, want \"false\"", d)
	}
	cond, _ := rt.Conditions[agentCoreCondition].(map[string]any)
	if eq, _ := cond["Fn::Equals"].([]any); len(eq) != 2 || ref(eq[0]) != "DeployAgentCoreGateway" || eq[1] != "true" {
		t.Errorf("condition %s is %v, want !Equals [!Ref DeployAgentCoreGateway, \"true\"]", agentCoreCondition, rt.Conditions[agentCoreCondition])
	}
	// Deploying it without the JWT settings fails before anything is
	// created.
	rule, _ := rt.Rules["AgentCoreNeedsJwtSettings"].(map[string]any)
	if rc, _ := dig(rule, "RuleCondition", "Fn::Equals").([]any); len(rc) != 2 || ref(rc[0]) != "DeployAgentCoreGateway" || rc[1] != "true" {
		t.Errorf("rule AgentCoreNeedsJwtSettings: RuleCondition %v", dig(rule, "RuleCondition"))
	}
	var asserted []string
	for _, a := range list(rule["Assertions"]) {
		eq, _ := dig(a, "Assert", "Fn::Not").([]any)
		if len(eq) == 1 {
			if args, _ := dig(eq[0], "Fn::Equals").([]any); len(args) == 2 && args[1] == "" {
				asserted = append(asserted, ref(args[0]))
			}
		}
	}
	if slices.Sort(asserted); !slices.Equal(asserted, []string{"JwtAudience", "JwtIssuer"}) {
		t.Errorf("rule AgentCoreNeedsJwtSettings asserts %v non-empty, want JwtAudience and JwtIssuer", asserted)
	}
	var ids []string
	ids = append(ids, rt.LogicalIDs(typeAgentCoreGateway)...)
	ids = append(ids, rt.LogicalIDs(typeAgentCoreTarget)...)
	ids = append(ids, agentCoreInterceptor, agentCoreRoleID)
	for id, p := range rt.Resources("AWS::Lambda::Permission") {
		if getAtt(p.Properties["Principal"]) == agentCoreRoleID+".Arn" {
			ids = append(ids, id)
		}
	}
	for _, id := range ids {
		r, ok := rt.Resource(id)
		if !ok {
			t.Errorf("no resource %s", id)
			continue
		}
		if c := conditionOf(r); c != agentCoreCondition {
			t.Errorf("%s has condition %q, want %s", id, c, agentCoreCondition)
		}
	}
}

// TestAgentCoreGateway: CUSTOM_JWT on the stack's issuer and audience, the
// gateway role, and the mcpfn interceptor at REQUEST with the headers
// passed (it verifies the bearer token itself).
func TestAgentCoreGateway(t *testing.T) {
	gw := mustResource(t, agentCoreGatewayID)
	p := gw.Properties
	if gw.Type != typeAgentCoreGateway || p["ProtocolType"] != "MCP" || p["AuthorizerType"] != "CUSTOM_JWT" {
		t.Errorf("%s: type %s, protocol %v, authorizer %v", agentCoreGatewayID, gw.Type, p["ProtocolType"], p["AuthorizerType"])
	}
	if getAtt(p["RoleArn"]) != agentCoreRoleID+".Arn" {
		t.Errorf("RoleArn %v", p["RoleArn"])
	}
	jwtAuth, _ := dig(p, "AuthorizerConfiguration", "CustomJWTAuthorizer").(map[string]any)
	if fn, arg := intrinsic(jwtAuth["DiscoveryUrl"]); fn != "Fn::Sub" || arg != "${JwtIssuer}/.well-known/openid-configuration" {
		t.Errorf("DiscoveryUrl %v", jwtAuth["DiscoveryUrl"])
	}
	if aud := list(jwtAuth["AllowedAudience"]); len(aud) != 1 || ref(aud[0]) != "JwtAudience" {
		t.Errorf("AllowedAudience %v", jwtAuth["AllowedAudience"])
	}
	ics := list(p["InterceptorConfigurations"])
	if len(ics) != 1 {
		t.Fatalf("InterceptorConfigurations %v, want the mcpfn REQUEST interceptor only", ics)
	}
	ic, _ := ics[0].(map[string]any)
	if pts := list(ic["InterceptionPoints"]); len(pts) != 1 || pts[0] != "REQUEST" {
		t.Errorf("InterceptionPoints %v", ic["InterceptionPoints"])
	}
	if getAtt(dig(ic, "Interceptor", "Lambda", "Arn")) != agentCoreInterceptor+".Arn" {
		t.Errorf("interceptor %v", ic["Interceptor"])
	}
	if dig(ic, "InputConfiguration", "PassRequestHeaders") != true {
		t.Errorf("PassRequestHeaders must be true: the interceptor verifies the bearer token")
	}
}

// TestAgentCoreTargets: one Lambda target per catalog tool, named as the
// interceptor and the Cedar policies expect, on the tool's own function,
// with the catalog's schema inline (exactly what `mcpfn agentcore-schemas`
// writes).
func TestAgentCoreTargets(t *testing.T) {
	rt := raw(t)
	cat := repoCatalog(t)
	fns := gatewayToolFunctions(t)
	seen := map[string]bool{}
	for _, id := range rt.LogicalIDs(typeAgentCoreTarget) {
		p := mustResource(t, id).Properties
		lam, _ := dig(p, "TargetConfiguration", "Mcp", "Lambda").(map[string]any)
		inline := list(dig(lam, "ToolSchema", "InlinePayload"))
		if len(inline) != 1 {
			t.Errorf("%s: %d inline tools, want 1 (one function, one tool)", id, len(inline))
			continue
		}
		got := camel(inline[0])
		tool, _ := got.(map[string]any)["name"].(string)
		seen[tool] = true
		if p["Name"] != agentcore.TargetName(tool) {
			t.Errorf("%s: Name %v, want %s", id, p["Name"], agentcore.TargetName(tool))
		}
		if getAtt(lam["LambdaArn"]) != fns[tool]+".Arn" {
			t.Errorf("%s: LambdaArn %v, want !GetAtt %s.Arn", id, lam["LambdaArn"], fns[tool])
		}
		if getAtt(p["GatewayIdentifier"]) != agentCoreGatewayID+".GatewayIdentifier" {
			t.Errorf("%s: GatewayIdentifier %v", id, p["GatewayIdentifier"])
		}
		creds := list(p["CredentialProviderConfigurations"])
		if len(creds) != 1 || dig(creds[0], "CredentialProviderType") != "GATEWAY_IAM_ROLE" {
			t.Errorf("%s: CredentialProviderConfigurations %v", id, creds)
		}
		var want any
		if e, ok := cat.Entry(tool); ok {
			def, err := agentcore.Definition(declaredTool(t, e))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(def)
			_ = json.Unmarshal(b, &want)
		}
		if !reflect.DeepEqual(got, want) {
			gb, _ := json.MarshalIndent(got, "", " ")
			wb, _ := json.MarshalIndent(want, "", " ")
			t.Errorf("%s: inline schema\n%s\nwant (mcpfn agentcore-schemas)\n%s", id, gb, wb)
		}
	}
	for _, e := range cat.Tools {
		if !seen[e.Tool.Name] {
			t.Errorf("tool %s has no AgentCore target", e.Tool.Name)
		}
	}
}

// camel turns CloudFormation's PascalCase schema keys into the API's
// camelCase, leaving property names (the keys of Properties) alone; YAML
// flow lists of strings stay lists.
func camel(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, val := range x {
			key := string(unicode.ToLower(rune(k[0]))) + k[1:]
			if k == "Properties" {
				props := map[string]any{}
				for name, s := range val.(map[string]any) {
					props[name] = camel(s)
				}
				out[key] = props
				continue
			}
			out[key] = camel(val)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = camel(e)
		}
		return out
	}
	return v
}

// TestAgentCoreInterceptorFunction: the interceptor signs for exactly the
// tools the gateway forwards, with each tool function's own key secret, and
// verifies JWTs against the stack's issuer and audience.
func TestAgentCoreInterceptorFunction(t *testing.T) {
	res := mustResource(t, agentCoreInterceptor)
	env := envOf(res.Properties)
	fn, arg := intrinsic(env[gateway.EnvToolFunctions])
	gw := envOf(mustResource(t, "GatewayFunction").Properties)[gateway.EnvToolFunctions]
	_, gwArg := intrinsic(gw)
	if fn != "Fn::Sub" || strings.TrimSpace(arg.(string)) != strings.TrimSpace(gwArg.(string)) {
		t.Errorf("%s %s = %v, want the gateway's %v", agentCoreInterceptor, gateway.EnvToolFunctions, env[gateway.EnvToolFunctions], gw)
	}
	fn, arg = intrinsic(env[calltoken.EnvKeySecrets])
	s, _ := arg.(string)
	secrets, err := calltoken.ParseSecrets(s)
	if fn != "Fn::Sub" || err != nil {
		t.Fatalf("%s %s = %v (%v)", agentCoreInterceptor, calltoken.EnvKeySecrets, env[calltoken.EnvKeySecrets], err)
	}
	want := map[string]string{}
	for tool, f := range gatewayToolFunctions(t) {
		want[tool] = "${" + strings.TrimSuffix(f, "Function") + "CallKey}"
	}
	if !maps.Equal(secrets, want) {
		t.Errorf("%s = %v, want %v", calltoken.EnvKeySecrets, secrets, want)
	}
	if ref(env[gateway.EnvJWTIssuer]) != "JwtIssuer" || ref(env[gateway.EnvJWTAudience]) != "JwtAudience" {
		t.Errorf("JWT settings %v %v", env[gateway.EnvJWTIssuer], env[gateway.EnvJWTAudience])
	}
}

// TestAgentCoreGatewayRole: only AgentCore may assume it, and it may invoke
// exactly the tool functions and the interceptor.
func TestAgentCoreGatewayRole(t *testing.T) {
	p := mustResource(t, agentCoreRoleID).Properties
	stmts := list(dig(p, "AssumeRolePolicyDocument", "Statement"))
	if len(stmts) != 1 || dig(stmts[0], "Principal", "Service") != "bedrock-agentcore.amazonaws.com" ||
		dig(stmts[0], "Action") != "sts:AssumeRole" || dig(stmts[0], "Effect") != "Allow" {
		t.Errorf("trust policy %v", stmts)
	}
	if ref(dig(stmts[0], "Condition", "StringEquals", "aws:SourceAccount")) != "AWS::AccountId" {
		t.Errorf("trust policy is not limited to this account: %v", stmts)
	}
	// Confused deputy: only on behalf of this account's AgentCore gateways
	// in this region (the exact gateway's ARN would need the role first).
	if got, want := dig(stmts[0], "Condition", "ArnLike", "aws:SourceArn"),
		map[string]any{"Fn::Sub": "arn:${AWS::Partition}:bedrock-agentcore:${AWS::Region}:${AWS::AccountId}:gateway/*"}; !reflect.DeepEqual(got, want) {
		t.Errorf("trust policy's aws:SourceArn is %v, want ArnLike %v", got, want)
	}
	if conds, _ := dig(stmts[0], "Condition").(map[string]any); len(conds) != 2 {
		t.Errorf("trust policy conditions %v, want StringEquals aws:SourceAccount and ArnLike aws:SourceArn only", conds)
	}
	got := map[string]bool{}
	for _, pol := range list(p["Policies"]) {
		for _, st := range list(dig(pol, "PolicyDocument", "Statement")) {
			if dig(st, "Effect") != "Allow" {
				t.Errorf("statement %v", st)
			}
			for _, a := range list(dig(st, "Action")) {
				for _, r := range list(dig(st, "Resource")) {
					name, err := resourceName(r)
					if err != nil {
						t.Error(err)
					}
					got[a.(string)+" on "+name] = true
				}
			}
		}
	}
	want := map[string]bool{"lambda:InvokeFunction on " + agentCoreInterceptor: true}
	for _, f := range gatewayToolFunctions(t) {
		want["lambda:InvokeFunction on "+f] = true
	}
	if !maps.Equal(got, want) {
		t.Errorf("%s grants %v, want %v", agentCoreRoleID, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
}

func dig(v any, path ...string) any {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}
