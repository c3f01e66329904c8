package wire

// The AgentCore Gateway Lambda-target contract: the keys of the client
// context's custom map that AgentCore Gateway sets when it invokes a tool's
// function (the payload is the arguments object alone), and the reserved
// argument the mcpfn request interceptor adds.
const (
	AgentCoreToolName          = "bedrockAgentCoreToolName" // "<target>___<tool>"
	AgentCoreRequestID         = "bedrockAgentCoreAwsRequestId"
	AgentCoreMessageID         = "bedrockAgentCoreMcpMessageId"
	AgentCoreGatewayID         = "bedrockAgentCoreGatewayId"
	AgentCoreTargetID          = "bedrockAgentCoreTargetId"
	AgentCoreMessageVersion    = "bedrockAgentCoreMessageVersion"
	AgentCorePropagatedHeaders = "bedrockAgentCorePropagatedHeaders"

	// AgentCoreTargetSeparator joins a target's name and a tool's name in
	// the tool name AgentCore Gateway sends.
	AgentCoreTargetSeparator = "___"
)

// ReservedArgument is the argument key under which the mcpfn AgentCore
// request interceptor passes its call token to a Lambda target:
// {"_mcpfn":{"callToken":"…"}}. The adapter removes it before anything else
// reads the arguments, so tool schemas never see it and the token's
// arguments digest covers the arguments without it.
const ReservedArgument = "_mcpfn"
