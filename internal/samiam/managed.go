package samiam

import (
	"fmt"
	"strings"

	"github.com/mcpfn/mcpfn/internal/iam"
)

// managedPolicyDoc is an AWS managed policy the local stack knows the
// statements of: the ones SAM attaches to the roles it generates.
type managedPolicyDoc struct {
	name    string
	actions []string
}

func (m managedPolicyDoc) policy(role string) *iam.Policy {
	return &iam.Policy{Name: role + " managed policy " + m.name, Kind: iam.IdentityBased, Statements: []iam.Statement{
		{Effect: iam.Allow, Actions: m.actions, Resources: []string{"*"}},
	}}
}

var xrayWrite = []string{"xray:PutTraceSegments", "xray:PutTelemetryRecords", "xray:GetSamplingRules",
	"xray:GetSamplingTargets", "xray:GetSamplingStatisticSummaries"}

var managed = map[string]managedPolicyDoc{
	"AWSLambdaBasicExecutionRole": {"AWSLambdaBasicExecutionRole", []string{"logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"}},
	"AWSXrayWriteOnlyAccess":      {"AWSXrayWriteOnlyAccess", xrayWrite},
	"AWSXRayDaemonWriteAccess":    {"AWSXRayDaemonWriteAccess", xrayWrite},
}

// managedPolicy finds a managed policy by name or ARN
// (arn:aws:iam::aws:policy[/service-role]/<name>).
func managedPolicy(where, nameOrARN string) (managedPolicyDoc, error) {
	name := nameOrARN
	if strings.HasPrefix(name, "arn:") {
		i := strings.LastIndex(name, "/")
		if !strings.Contains(name, ":iam::aws:policy/") || i < 0 {
			return managedPolicyDoc{}, fmt.Errorf("samiam: %s: the managed policy %s is not an AWS managed policy the local stack knows", where, nameOrARN)
		}
		name = name[i+1:]
	}
	m, ok := managed[name]
	if !ok {
		return managedPolicyDoc{}, fmt.Errorf("samiam: %s: the managed policy %s is not known locally (known: AWSLambdaBasicExecutionRole, AWSXrayWriteOnlyAccess, AWSXRayDaemonWriteAccess); write its statements instead", where, nameOrARN)
	}
	return m, nil
}

// ImplicitRole is the role SAM generates for a function that declares no
// Policies: SAM's own policies only (AWSLambdaBasicExecutionRole, and
// AWSXrayWriteOnlyAccess with tracing).
func ImplicitRole(account, logicalID string, tracing bool) *Role {
	r := &Role{LogicalID: logicalID, ARN: RoleARN(account, logicalID)}
	r.Policies = append(r.Policies, managed["AWSLambdaBasicExecutionRole"].policy(logicalID))
	if tracing {
		r.Policies = append(r.Policies, managed["AWSXrayWriteOnlyAccess"].policy(logicalID))
	}
	return r
}
