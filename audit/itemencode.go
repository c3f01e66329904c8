package audit

import (
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// rowAttributes is the row's own attributes as attributevalue.MarshalMap
// encodes a Row — the same names, the same omissions, the same number and
// time formats — written out instead of found by reflection, which cost a
// warm function a tenth of its row's write (docs/benchmarks.md). Queries
// still decode with attributevalue.UnmarshalMap. TestRowAttributesAreMarshalMap
// fails when a field of Row or Object is added, renamed or retagged without
// this function following.
func rowAttributes(r *Row) map[string]types.AttributeValue {
	m := make(map[string]types.AttributeValue, 40)
	str := func(name, v string) { m[name] = &types.AttributeValueMemberS{Value: v} }
	optStr := func(name, v string) {
		if v != "" {
			str(name, v)
		}
	}
	optBool := func(name string, v bool) {
		if v {
			m[name] = &types.AttributeValueMemberBOOL{Value: true}
		}
	}
	optInt := func(name string, v int64) {
		if v != 0 {
			m[name] = &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
		}
	}

	str("callId", r.CallID)
	optStr("writer", r.Writer)
	str("status", r.Status)
	optStr("attemptId", r.AttemptID)
	str("tool", r.Tool)
	str("source", r.Source)

	optStr("mcpEra", r.MCPEra)
	optStr("mcpMethod", r.MCPMethod)
	optStr("protocolVersion", r.ProtocolVersion)
	optStr("clientName", r.ClientName)
	optStr("clientVersion", r.ClientVersion)
	optStr("mcpOutcome", r.MCPOutcome)
	optInt("mcpRound", int64(r.MCPRound))

	optStr("callerSubject", r.CallerSubject)
	optStr("callerAuthMethod", r.CallerAuthMethod)
	optStr("callerIssuer", r.CallerIssuer)
	optStr("callerClientId", r.CallerClientID)
	optStr("callerIp", r.CallerIP)
	optStr("callerUserAgent", r.CallerUserAgent)
	optStr("unverifiedCaller", r.UnverifiedCaller)
	optStr("callerRoleSession", r.CallerRoleSession)
	optStr("tenant", r.Tenant)
	optStr("taskId", r.TaskID)
	optBool("cancelled", r.Cancelled)
	optStr("sessionId", r.SessionID)

	optStr("traceId", r.TraceID)
	str("spanId", r.SpanID)
	optStr("parentSpanId", r.ParentSpanID)
	optStr("sampled", r.Sampled)
	optStr("linkedTraceparent", r.LinkedTraceparent)

	str("startedAt", r.StartedAt.Format(time.RFC3339Nano))
	m["durationMs"] = &types.AttributeValueMemberN{Value: strconv.FormatFloat(r.DurationMs, 'f', -1, 64)}

	m["ok"] = &types.AttributeValueMemberBOOL{Value: r.OK}
	optStr("stage", r.Stage)
	optStr("errorCode", r.ErrorCode)
	optStr("errorMessage", r.ErrorMessage)
	optStr("rawError", r.RawError)
	optBool("panicked", r.Panicked)
	optStr("outcome", r.Outcome)
	optStr("lateOutcome", r.LateOutcome)
	optStr("lateErrorCode", r.LateErrorCode)
	if r.FinishedAt != nil {
		str("finishedAt", r.FinishedAt.Format(time.RFC3339Nano))
	}

	optStr("argsPreview", r.ArgsPreview)
	optBool("argsTruncated", r.ArgsTruncated)
	m["resultBytes"] = &types.AttributeValueMemberN{Value: strconv.Itoa(r.ResultBytes)}

	optInt("argsBytes", r.ArgsBytes)
	optStr("argsSha256", r.ArgsSHA256)
	if r.ArgsObject != nil {
		m["argsObject"] = objectAttribute(r.ArgsObject)
	}
	optStr("resultSha256", r.ResultSHA256)
	if r.ResultObject != nil {
		m["resultObject"] = objectAttribute(r.ResultObject)
	}

	if r.Dimensions != nil { // an empty map too, as MarshalMap does
		d := make(map[string]types.AttributeValue, len(r.Dimensions))
		for k, v := range r.Dimensions {
			d[k] = &types.AttributeValueMemberS{Value: v}
		}
		m["dimensions"] = &types.AttributeValueMemberM{Value: d}
	}

	optStr("lambdaRequestId", r.LambdaRequestID)
	optStr("functionName", r.FunctionName)
	optStr("functionVersion", r.FunctionVersion)
	optBool("coldStart", r.ColdStart)
	optBool("destructive", r.Destructive)

	optInt("expiresAt", r.ExpiresAt)
	return m
}

// objectAttribute encodes an Object as MarshalMap does.
func objectAttribute(o *Object) types.AttributeValue {
	v := map[string]types.AttributeValue{
		"bucket": &types.AttributeValueMemberS{Value: o.Bucket},
		"key":    &types.AttributeValueMemberS{Value: o.Key},
	}
	if o.VersionID != "" {
		v["versionId"] = &types.AttributeValueMemberS{Value: o.VersionID}
	}
	return &types.AttributeValueMemberM{Value: v}
}
