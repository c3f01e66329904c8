package gentemplate

import (
	"fmt"
	"strings"

	"github.com/mcpfn/mcpfn/agentcore"
)

// blocks renders each generated block of template.yaml by name, as lines
// relative to the block's indentation ("" for an empty line).
var blocks = map[string]func([]Tool) []string{
	"call-keys":             callKeys,
	"tool-maps":             toolMaps,
	"function-arns":         each("- !GetAtt %sFunction.Arn"),
	"call-key-refs":         each("- !Ref %sCallKey"),
	"invoke-permissions":    invokePermissions,
	"agentcore-targets":     agentCoreTargets,
	"agentcore-permissions": agentCorePermissions,
	"function-outputs":      each("%sFunctionArn:", "  Value: !GetAtt %sFunction.Arn"),
}

// each renders lines once per tool, %s being the tool's Prefix.
func each(lines ...string) func([]Tool) []string {
	return func(tools []Tool) []string {
		var out []string
		for _, t := range tools {
			for _, l := range lines {
				out = append(out, strings.ReplaceAll(l, "%s", Prefix(t.Name)))
			}
		}
		return out
	}
}

// callKeys: each tool function's call-key secret and its resource policy,
// which denies every principal but the function's role and the two
// signers' (the gateway; the AgentCore interceptor when deployed).
func callKeys(tools []Tool) []string {
	var out []string
	for _, t := range tools {
		p := Prefix(t.Name)
		out = append(out,
			p+"CallKey:",
			"  Type: AWS::SecretsManager::Secret",
			"  Properties:",
			"    Description: mcpfn call-token key of "+t.Name+" (signs and verifies its calls)",
			"    GenerateSecretString:",
			"      PasswordLength: 64",
			"      ExcludePunctuation: true",
			"    Tags:",
			"      - Key: mcpfn:component",
			"        Value: call-keys",
			p+"CallKeyPolicy:",
			"  Type: AWS::SecretsManager::ResourcePolicy",
			"  Properties:",
			"    SecretId: !Ref "+p+"CallKey",
			"    BlockPublicPolicy: true",
			"    ResourcePolicy:",
			`      Version: "2012-10-17"`,
			"      Statement:",
			"        - Sid: OnlyTheFunctionAndItsSigners",
			"          Effect: Deny",
			`          Principal: "*"`,
			"          Action: secretsmanager:GetSecretValue",
			`          Resource: "*"`,
			"          Condition:",
			"            StringNotEquals:",
			"              aws:PrincipalArn:",
			"                - !GetAtt "+p+"FunctionRole.Arn",
			"                - !GetAtt GatewayFunctionRole.Arn",
			"                # The AgentCore interceptor signs calls to every tool function.",
			"                - !If [DeployAgentCore, !GetAtt AgentCoreInterceptorFunctionRole.Arn, !Ref AWS::NoValue]",
		)
	}
	return out
}

// toolMaps: the signers' environment, tool → function and tool → call-key
// secret.
func toolMaps(tools []Tool) []string {
	fns := make([]string, len(tools))
	keys := make([]string, len(tools))
	for i, t := range tools {
		fns[i] = fmt.Sprintf("%s=${%sFunction}", t.Name, Prefix(t.Name))
		keys[i] = fmt.Sprintf("%s=${%sCallKey}", t.Name, Prefix(t.Name))
	}
	return []string{
		"MCPFN_TOOL_FUNCTIONS: !Sub >-",
		"  " + strings.Join(fns, ","),
		"# Every forwarded call is signed with its function's key.",
		"MCPFN_CALL_KEY_SECRETS: !Sub >-",
		"  " + strings.Join(keys, ","),
	}
}

// invokePermissions: each tool function's resource policy, the gateway's
// role and (HasAgentCoreGateway) an external AgentCore Gateway's role.
func invokePermissions(tools []Tool) []string {
	out := permissions(tools, "GatewayPermission", "", "!GetAtt GatewayFunctionRole.Arn")
	return append(append(out, ""), permissions(tools, "AgentCorePermission", "HasAgentCoreGateway", "!Ref AgentCoreGatewayRoleArn")...)
}

// agentCorePermissions: the stack's own AgentCore Gateway role may invoke
// each tool function.
func agentCorePermissions(tools []Tool) []string {
	return permissions(tools, "AgentCoreGatewayPermission", "DeployAgentCore", "!GetAtt AgentCoreGatewayRole.Arn")
}

// permissions renders one AWS::Lambda::Permission per tool, <Prefix><suffix>,
// for principal, under condition when it is not "".
func permissions(tools []Tool, suffix, condition, principal string) []string {
	var out []string
	for _, t := range tools {
		p := Prefix(t.Name)
		out = append(out, p+suffix+":", "  Type: AWS::Lambda::Permission")
		if condition != "" {
			out = append(out, "  Condition: "+condition)
		}
		out = append(out,
			"  Properties:",
			"    Action: lambda:InvokeFunction",
			"    FunctionName: !GetAtt "+p+"Function.Arn",
			"    Principal: "+principal,
		)
	}
	return out
}

// agentCoreTargets: one Lambda target per tool on its own function, its
// schema inline (= bin/agentcore/<tool>.json).
func agentCoreTargets(tools []Tool) []string {
	var out []string
	for i, t := range tools {
		if i > 0 {
			out = append(out, "")
		}
		p := Prefix(t.Name)
		out = append(out,
			p+"AgentCoreTarget:",
			"  Type: AWS::BedrockAgentCore::GatewayTarget",
			"  Condition: DeployAgentCore",
			"  Properties:",
			"    GatewayIdentifier: !GetAtt AgentCoreGateway.GatewayIdentifier",
			"    Name: "+agentcore.TargetName(t.Name),
			"    CredentialProviderConfigurations:",
			"      - CredentialProviderType: GATEWAY_IAM_ROLE",
			"    TargetConfiguration:",
			"      Mcp:",
			"        Lambda:",
			"          LambdaArn: !GetAtt "+p+"Function.Arn",
			"          ToolSchema:",
			"            # = bin/agentcore/"+t.Name+".json (make agentcore-schemas); templatetest keeps them equal.",
			"            InlinePayload:",
		)
		out = append(out, indent("              ", definition(t.Definition))...)
	}
	return out
}
