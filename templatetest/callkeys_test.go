package templatetest

import (
	"slices"
	"testing"

	"github.com/mcpfn/mcpfn/calltoken"
	"github.com/mcpfn/mcpfn/gateway"
)

// Every tool function has a call key of its own: a generated secret long
// enough to be a key, named in the function's MCPFN_CALL_KEY_SECRET and the
// gateway's MCPFN_CALL_KEY_SECRETS, and a resource policy that denies every
// principal but the function's role and its signers' (the gateway's and,
// when deployed, the AgentCore interceptor's).
func TestEveryToolFunctionHasItsOwnCallKey(t *testing.T) {
	rt := raw(t)
	secrets := rt.Resources("AWS::SecretsManager::Secret")
	policies := rt.Resources("AWS::SecretsManager::ResourcePolicy")
	for _, fn := range gatewayToolFunctions(t) {
		res := rt.Resources(serverlessFunction)[fn]
		key := fn[:len(fn)-len("Function")] + "CallKey"
		env, _ := res.Properties["Environment"].(map[string]any)
		vars, _ := env["Variables"].(map[string]any)
		if f, arg := intrinsic(vars[calltoken.EnvKeySecret]); f != "Ref" || arg != key {
			t.Errorf("%s: %s = %v, want !Ref %s", fn, calltoken.EnvKeySecret, vars[calltoken.EnvKeySecret], key)
		}
		sec, ok := secrets[key]
		if !ok {
			t.Errorf("%s: no secret %s", fn, key)
			continue
		}
		gen, _ := sec.Properties["GenerateSecretString"].(map[string]any)
		if n, _ := gen["PasswordLength"].(int); n < 2*calltoken.MinSecretBytes || gen["ExcludePunctuation"] != true {
			t.Errorf("%s: GenerateSecretString %v: want at least %d alphanumerics", key, gen, 2*calltoken.MinSecretBytes)
		}
		var found bool
		for _, p := range policies {
			if f, arg := intrinsic(p.Properties["SecretId"]); f != "Ref" || arg != key {
				continue
			}
			found = true
			doc, _ := p.Properties["ResourcePolicy"].(map[string]any)
			stmts, _ := doc["Statement"].([]any)
			if len(stmts) != 1 {
				t.Fatalf("%s policy: %v", key, doc)
			}
			st, _ := stmts[0].(map[string]any)
			cond, _ := st["Condition"].(map[string]any)
			ne, _ := cond["StringNotEquals"].(map[string]any)
			allowed, _ := ne["aws:PrincipalArn"].([]any)
			var who []string
			for _, a := range allowed {
				if fn, arg := intrinsic(a); fn == "Fn::If" {
					// Only with the AgentCore Gateway: its interceptor.
					if l := list(arg); len(l) == 3 && l[0] == "DeployAgentCore" && getAtt(l[1]) == "AgentCoreInterceptorFunctionRole.Arn" && ref(l[2]) == "AWS::NoValue" {
						who = append(who, "if DeployAgentCore: AgentCoreInterceptorFunctionRole.Arn")
						continue
					}
				}
				who = append(who, getAtt(a))
			}
			slices.Sort(who)
			if st["Effect"] != "Deny" || st["Principal"] != "*" || st["Action"] != "secretsmanager:GetSecretValue" ||
				!slices.Equal(who, []string{fn + "Role.Arn", "GatewayFunctionRole.Arn", "if DeployAgentCore: AgentCoreInterceptorFunctionRole.Arn"}) {
				t.Errorf("%s policy statement %v: want Deny GetSecretValue to all but %sRole, GatewayFunctionRole and (with the AgentCore Gateway) AgentCoreInterceptorFunctionRole", key, st, fn)
			}
		}
		if !found {
			t.Errorf("%s: no resource policy", key)
		}
	}
}

// sessionKeyID is the gateway's session key: the secret the session ids it
// mints for initialize-era clients are MACed with (docs/decisions/0030).
const sessionKeyID = "GatewaySessionKey"

// The gateway's session key is a generated secret long enough to be a key,
// named in its MCPFN_SESSION_KEY_SECRET, that only the gateway's role may
// read: nothing else can mint a session id.
func TestTheSessionKeyIsTheGatewaysAlone(t *testing.T) {
	rt := raw(t)
	gw := rt.Resources(serverlessFunction)["GatewayFunction"]
	env, _ := gw.Properties["Environment"].(map[string]any)
	vars, _ := env["Variables"].(map[string]any)
	if f, arg := intrinsic(vars[gateway.EnvSessionKeySecret]); f != "Ref" || arg != sessionKeyID {
		t.Errorf("GatewayFunction: %s = %v, want !Ref %s", gateway.EnvSessionKeySecret, vars[gateway.EnvSessionKeySecret], sessionKeyID)
	}
	sec, ok := rt.Resources("AWS::SecretsManager::Secret")[sessionKeyID]
	if !ok {
		t.Fatalf("no secret %s", sessionKeyID)
	}
	gen, _ := sec.Properties["GenerateSecretString"].(map[string]any)
	if n, _ := gen["PasswordLength"].(int); n < 2*calltoken.MinSecretBytes || gen["ExcludePunctuation"] != true {
		t.Errorf("%s: GenerateSecretString %v: want at least %d alphanumerics", sessionKeyID, gen, 2*calltoken.MinSecretBytes)
	}
	var found bool
	for _, p := range rt.Resources("AWS::SecretsManager::ResourcePolicy") {
		if f, arg := intrinsic(p.Properties["SecretId"]); f != "Ref" || arg != sessionKeyID {
			continue
		}
		found = true
		doc, _ := p.Properties["ResourcePolicy"].(map[string]any)
		stmts, _ := doc["Statement"].([]any)
		st, _ := stmts[0].(map[string]any)
		cond, _ := st["Condition"].(map[string]any)
		ne, _ := cond["StringNotEquals"].(map[string]any)
		if len(stmts) != 1 || st["Effect"] != "Deny" || st["Principal"] != "*" || st["Action"] != "secretsmanager:GetSecretValue" ||
			getAtt(ne["aws:PrincipalArn"]) != "GatewayFunctionRole.Arn" {
			t.Errorf("%s policy %v: want Deny GetSecretValue to all but GatewayFunctionRole", sessionKeyID, doc)
		}
	}
	if !found {
		t.Errorf("%s: no resource policy", sessionKeyID)
	}
}
