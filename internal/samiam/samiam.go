// Package samiam derives, from a SAM template, the IAM a deployment of it
// would have: each function's execution role with every policy it would
// carry (the Policies the template gives it and the ones SAM adds), the
// roles and policies the template declares itself, and the resource-based
// policies of its secrets and functions. The local stack enforces what it
// derives (internal/iam).
//
// Buckets' policies (AWS::S3::BucketPolicy) are resource-based policies of
// the bucket, and govern its objects.
//
// What SAM adds to a function without a Role (the AWS::IAM::Role it
// generates, logical id <Function>Role, assumable by lambda.amazonaws.com):
//
//   - the managed policy AWSLambdaBasicExecutionRole (logs:CreateLogGroup,
//     logs:CreateLogStream, logs:PutLogEvents on *), always;
//   - AWSXrayWriteOnlyAccess (xray:PutTraceSegments, PutTelemetryRecords,
//     GetSamplingRules, GetSamplingTargets, GetSamplingStatisticSummaries on
//     *) with Tracing Active or PassThrough (AWSXRayDaemonWriteAccess, the
//     same actions, outside the aws partition);
//   - one inline policy per item of Policies: a statement document as
//     written, an AWS managed policy by name or ARN;
//   - policies for VpcConfig, DeadLetterQueue, event-invoke destinations
//     and event sources, which this package does not derive: a function
//     using one is an error naming it (fail closed), as are SAM policy
//     templates (DynamoDBCrudPolicy, …), managed policies other than the
//     two above, permission boundaries and a Role that is not a role of the
//     template.
//
// Every error names the resource and the element; the stack refuses to
// start on one rather than enforce less than AWS would.
package samiam

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mcpfn/mcpfn/internal/iam"
	"github.com/mcpfn/mcpfn/internal/samtemplate"
)

// Resource types read here.
const (
	typeFunction       = "AWS::Serverless::Function"
	typeRole           = "AWS::IAM::Role"
	typePolicy         = "AWS::IAM::Policy"
	typeManagedPolicy  = "AWS::IAM::ManagedPolicy"
	typeSecretPolicy   = "AWS::SecretsManager::ResourcePolicy"
	typeBucketPolicy   = samtemplate.TypeS3BucketPolicy
	typePermission     = "AWS::Lambda::Permission"
	typeDynamoDBTable  = "AWS::DynamoDB::Table"
	typeLambdaFunction = "AWS::Lambda::Function"
)

// Model is the IAM of one template.
type Model struct {
	// Roles by logical id (a SAM function's is "<Function>Role").
	Roles map[string]*Role
	// FunctionRoles maps a function's logical id to its role's.
	FunctionRoles map[string]string
	// ResourcePolicies by resource ARN: the secrets', the functions' and
	// the buckets' (which govern their objects too: iam.PolicyResource).
	ResourcePolicies map[string]*iam.Policy
}

// Role is an IAM role and its identity policies.
type Role struct {
	LogicalID string
	ARN       string
	Policies  []*iam.Policy
}

// RoleARN is the ARN the local stack gives a role of the template.
func RoleARN(account, logicalID string) string {
	return "arn:aws:iam::" + account + ":role/" + logicalID
}

// Derive reads t's IAM. vals resolves intrinsics (it must name every
// resource a policy refers to, and give every template condition as "true"
// or "false" under the condition's name in Refs); Derive adds the roles'
// ARNs (Fn::GetAtt <Role>.Arn) and names (Ref <Role>) itself. Resources
// whose Condition is false are left out, as CloudFormation leaves them out.
func Derive(t *samtemplate.Template, vals samtemplate.Values, account string) (*Model, error) {
	v := samtemplate.Values{Refs: map[string]string{}, Attrs: map[string]string{}}
	for k, x := range vals.Refs {
		v.Refs[k] = x
	}
	for k, x := range vals.Attrs {
		v.Attrs[k] = x
	}
	m := &Model{Roles: map[string]*Role{}, FunctionRoles: map[string]string{}, ResourcePolicies: map[string]*iam.Policy{}}
	d := &deriver{t: t, vals: v, account: account, m: m}
	present := func(id string) (bool, error) { return d.present(id) }

	// Name every role first: policies refer to roles, roles to nothing.
	for _, id := range t.LogicalIDs(typeRole) {
		if ok, err := present(id); err != nil || !ok {
			if err != nil {
				return nil, err
			}
			continue
		}
		d.addRole(id)
	}
	for _, id := range t.LogicalIDs(typeFunction) {
		if ok, err := present(id); err != nil || !ok {
			if err != nil {
				return nil, err
			}
			continue
		}
		r, _ := t.Resource(id)
		if _, own := r.Properties["Role"]; !own {
			d.addRole(id + "Role")
		}
	}
	if ids := t.LogicalIDs(typeLambdaFunction); len(ids) > 0 {
		return nil, fmt.Errorf("samiam: %s: AWS::Lambda::Function resources are not derived locally (declare them as AWS::Serverless::Function)", ids[0])
	}
	for _, id := range t.LogicalIDs(typeRole) {
		if _, ok := m.Roles[id]; ok {
			if err := d.iamRole(id); err != nil {
				return nil, err
			}
		}
	}
	for _, id := range t.LogicalIDs(typeFunction) {
		if ok, _ := present(id); ok {
			if err := d.function(id); err != nil {
				return nil, err
			}
		}
	}
	for _, typ := range []string{typePolicy, typeManagedPolicy} {
		for _, id := range t.LogicalIDs(typ) {
			if ok, err := present(id); err != nil {
				return nil, err
			} else if ok {
				if err := d.attachedPolicy(id); err != nil {
					return nil, err
				}
			}
		}
	}
	for _, id := range t.LogicalIDs(typeSecretPolicy) {
		if ok, err := present(id); err != nil {
			return nil, err
		} else if ok {
			if err := d.secretPolicy(id); err != nil {
				return nil, err
			}
		}
	}
	for _, id := range t.LogicalIDs(typeBucketPolicy) {
		if ok, err := present(id); err != nil {
			return nil, err
		} else if ok {
			if err := d.bucketPolicy(id); err != nil {
				return nil, err
			}
		}
	}
	for _, id := range t.LogicalIDs(typePermission) {
		if ok, err := present(id); err != nil {
			return nil, err
		} else if ok {
			if err := d.permission(id); err != nil {
				return nil, err
			}
		}
	}
	for _, id := range t.LogicalIDs(typeDynamoDBTable) {
		r, _ := t.Resource(id)
		if _, ok := r.Properties["ResourcePolicy"]; ok {
			return nil, fmt.Errorf("samiam: %s: a table's ResourcePolicy is not evaluated locally", id)
		}
	}
	return m, nil
}

type deriver struct {
	t       *samtemplate.Template
	vals    samtemplate.Values
	account string
	m       *Model
}

// present: a resource without a Condition, or whose Condition is given as
// true.
func (d *deriver) present(id string) (bool, error) {
	r, _ := d.t.Resource(id)
	c, ok := r.Attributes["Condition"]
	if !ok {
		return true, nil
	}
	name, _ := c.(string)
	switch d.vals.Refs[name] {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("samiam: %s: its Condition %v has no local value", id, c)
}

func (d *deriver) addRole(id string) {
	arn := RoleARN(d.account, id)
	d.m.Roles[id] = &Role{LogicalID: id, ARN: arn}
	d.vals.Attrs[id+".Arn"] = arn
	d.vals.Refs[id] = id
}

func (d *deriver) resolve(where string, v any) (any, error) {
	out, err := d.t.Resolve(v, d.vals)
	if err != nil {
		return nil, fmt.Errorf("samiam: %s: %w", where, err)
	}
	return out, nil
}

func (d *deriver) resolveString(where string, v any) (string, error) {
	out, err := d.t.ResolveString(v, d.vals)
	if err != nil {
		return "", fmt.Errorf("samiam: %s: %w", where, err)
	}
	return out, nil
}

// fnProp is a SAM function's property, its own or from Globals.Function.
func (d *deriver) fnProp(r samtemplate.Resource, name string) (any, bool) {
	if v, ok := r.Properties[name]; ok {
		return v, true
	}
	g, _ := d.t.Globals["Function"].(map[string]any)
	v, ok := g[name]
	return v, ok
}

func (d *deriver) function(id string) error {
	r, _ := d.t.Resource(id)
	if role, ok := r.Properties["Role"]; ok {
		fn, arg, isIntrinsic := samtemplate.Intrinsic(role)
		target := ""
		if isIntrinsic && fn == "Fn::GetAtt" {
			if a, ok := arg.([]any); ok && len(a) == 2 && a[1] == "Arn" {
				target, _ = a[0].(string)
			}
		}
		if _, known := d.m.Roles[target]; !known {
			return fmt.Errorf("samiam: %s: Role %v is not !GetAtt <an AWS::IAM::Role of this template>.Arn, so its policies are unknown locally", id, role)
		}
		d.m.FunctionRoles[id] = target
		return nil
	}
	for _, p := range []string{"VpcConfig", "DeadLetterQueue", "PermissionsBoundary", "Events"} {
		if _, ok := d.fnProp(r, p); ok {
			return fmt.Errorf("samiam: %s: %s: the policies SAM adds for it are not derived locally", id, p)
		}
	}
	if eic, ok := d.fnProp(r, "EventInvokeConfig"); ok {
		if m, _ := eic.(map[string]any); m["DestinationConfig"] != nil {
			return fmt.Errorf("samiam: %s: EventInvokeConfig.DestinationConfig: the policies SAM adds for it are not derived locally", id)
		}
	}
	roleID := id + "Role"
	role := d.m.Roles[roleID]
	d.m.FunctionRoles[id] = roleID
	role.Policies = append(role.Policies, managed["AWSLambdaBasicExecutionRole"].policy(roleID))
	if tr, ok := d.fnProp(r, "Tracing"); ok {
		mode, err := d.resolveString(id+" Tracing", tr)
		if err != nil {
			return err
		}
		if mode == "Active" || mode == "PassThrough" {
			role.Policies = append(role.Policies, managed["AWSXrayWriteOnlyAccess"].policy(roleID))
		}
	}
	var items []any
	switch p := r.Properties["Policies"].(type) {
	case nil:
	case []any:
		items = p
	default:
		items = []any{p}
	}
	for i, item := range items {
		where := fmt.Sprintf("%s Policies[%d]", id, i)
		if m, ok := item.(map[string]any); ok {
			if _, isDoc := m["Statement"]; !isDoc {
				for name := range m {
					return fmt.Errorf("samiam: %s: the SAM policy template %s is not expanded locally (write its statements instead)", where, name)
				}
			}
		}
		res, err := d.resolve(where, item)
		if err != nil {
			return err
		}
		if s, ok := res.(string); ok {
			mp, err := managedPolicy(where, s)
			if err != nil {
				return err
			}
			role.Policies = append(role.Policies, mp.policy(roleID))
			continue
		}
		p, err := iam.ParsePolicy(fmt.Sprintf("%s inline policy %d", roleID, i), iam.IdentityBased, withVersion(res))
		if err != nil {
			return fmt.Errorf("samiam: %s: %w", where, err)
		}
		role.Policies = append(role.Policies, p)
	}
	return nil
}

// withVersion: SAM's `- Statement:` items carry no Version; SAM writes
// 2012-10-17.
func withVersion(doc any) any {
	m, ok := doc.(map[string]any)
	if !ok {
		return doc
	}
	if _, has := m["Version"]; has {
		return m
	}
	out := map[string]any{"Version": "2012-10-17"}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (d *deriver) iamRole(id string) error {
	r, _ := d.t.Resource(id)
	role := d.m.Roles[id]
	if _, ok := r.Properties["PermissionsBoundary"]; ok {
		return fmt.Errorf("samiam: %s: PermissionsBoundary is not evaluated locally", id)
	}
	if name, ok := r.Properties["RoleName"]; ok {
		s, err := d.resolveString(id+" RoleName", name)
		if err != nil {
			return err
		}
		role.ARN = "arn:aws:iam::" + d.account + ":role/" + s
		d.vals.Attrs[id+".Arn"] = role.ARN
		d.vals.Refs[id] = s
	}
	pols, _ := r.Properties["Policies"].([]any)
	for i, p := range pols {
		where := fmt.Sprintf("%s Policies[%d]", id, i)
		pm, _ := p.(map[string]any)
		doc, err := d.resolve(where, pm["PolicyDocument"])
		if err != nil {
			return err
		}
		name, _ := pm["PolicyName"].(string)
		pol, err := iam.ParsePolicy(fmt.Sprintf("%s inline policy %s", id, name), iam.IdentityBased, doc)
		if err != nil {
			return fmt.Errorf("samiam: %s: %w", where, err)
		}
		role.Policies = append(role.Policies, pol)
	}
	arns, err := d.resolve(id+" ManagedPolicyArns", r.Properties["ManagedPolicyArns"])
	if err != nil {
		return err
	}
	list, _ := arns.([]any)
	for i, a := range list {
		s, _ := a.(string)
		mp, err := managedPolicy(fmt.Sprintf("%s ManagedPolicyArns[%d]", id, i), s)
		if err != nil {
			return err
		}
		role.Policies = append(role.Policies, mp.policy(id))
	}
	return nil
}

// attachedPolicy attaches an AWS::IAM::Policy or ManagedPolicy to the
// roles of the template it names (users and groups are no local
// principals).
func (d *deriver) attachedPolicy(id string) error {
	r, _ := d.t.Resource(id)
	roles, err := d.resolve(id+" Roles", r.Properties["Roles"])
	if err != nil {
		return err
	}
	names, _ := roles.([]any)
	if len(names) == 0 {
		return nil
	}
	doc, err := d.resolve(id+" PolicyDocument", r.Properties["PolicyDocument"])
	if err != nil {
		return err
	}
	p, err := iam.ParsePolicy(id, iam.IdentityBased, doc)
	if err != nil {
		return fmt.Errorf("samiam: %s: %w", id, err)
	}
	for _, n := range names {
		for _, role := range d.m.Roles {
			if d.vals.Refs[role.LogicalID] == n {
				role.Policies = append(role.Policies, p)
			}
		}
	}
	return nil
}

func (d *deriver) addResourceStatements(arn, name string, doc any) error {
	p, err := iam.ParsePolicy(name, iam.ResourceBased, doc)
	if err != nil {
		return fmt.Errorf("samiam: %w", err)
	}
	if have := d.m.ResourcePolicies[arn]; have != nil {
		have.Statements = append(have.Statements, p.Statements...)
		have.Name += ", " + name
		return nil
	}
	d.m.ResourcePolicies[arn] = p
	return nil
}

func (d *deriver) secretPolicy(id string) error {
	r, _ := d.t.Resource(id)
	arn, err := d.resolveString(id+" SecretId", r.Properties["SecretId"])
	if err != nil {
		return err
	}
	doc, err := d.resolve(id+" ResourcePolicy", r.Properties["ResourcePolicy"])
	if err != nil {
		return err
	}
	return d.addResourceStatements(arn, id, doc)
}

// bucketPolicy attaches an AWS::S3::BucketPolicy to its bucket's ARN.
func (d *deriver) bucketPolicy(id string) error {
	r, _ := d.t.Resource(id)
	for k := range r.Properties {
		if k != "Bucket" && k != "PolicyDocument" {
			return fmt.Errorf("samiam: %s: the BucketPolicy property %s is not evaluated locally", id, k)
		}
	}
	bucket, err := d.resolveString(id+" Bucket", r.Properties["Bucket"])
	if err != nil {
		return err
	}
	doc, err := d.resolve(id+" PolicyDocument", r.Properties["PolicyDocument"])
	if err != nil {
		return err
	}
	return d.addResourceStatements(BucketARN(bucket), id, doc)
}

// permission turns an AWS::Lambda::Permission into the statement Lambda
// adds to the function's resource-based policy.
func (d *deriver) permission(id string) error {
	r, _ := d.t.Resource(id)
	props, err := d.resolve(id, r.Properties)
	if err != nil {
		return err
	}
	p, _ := props.(map[string]any)
	str := func(k string) string { s, _ := p[k].(string); return s }
	for k := range p {
		switch k {
		case "Action", "FunctionName", "Principal", "SourceArn", "SourceAccount", "PrincipalOrgID", "FunctionUrlAuthType", "InvokedViaFunctionUrl":
		default:
			return fmt.Errorf("samiam: %s: the Permission property %s is not evaluated locally", id, k)
		}
	}
	fn := str("FunctionName")
	if !strings.HasPrefix(fn, "arn:") {
		fn = "arn:aws:lambda:" + d.region() + ":" + d.account + ":function:" + fn
	}
	principal := str("Principal")
	var pr any
	switch {
	case principal == "":
		return fmt.Errorf("samiam: %s: Principal is empty", id)
	case principal == "*":
		pr = "*"
	case strings.HasSuffix(principal, ".amazonaws.com") || strings.HasSuffix(principal, ".amazonaws.com.cn"):
		pr = map[string]any{"Service": principal}
	default:
		pr = map[string]any{"AWS": principal}
	}
	cond := map[string]any{}
	add := func(op, key, val string) {
		if val == "" {
			return
		}
		m, _ := cond[op].(map[string]any)
		if m == nil {
			m = map[string]any{}
			cond[op] = m
		}
		m[key] = val
	}
	add("ArnLike", "AWS:SourceArn", str("SourceArn"))
	add("StringEquals", "AWS:SourceAccount", str("SourceAccount"))
	add("StringEquals", "aws:PrincipalOrgID", str("PrincipalOrgID"))
	add("StringEquals", "lambda:FunctionUrlAuthType", str("FunctionUrlAuthType"))
	if v, ok := p["InvokedViaFunctionUrl"]; ok {
		add("Bool", "lambda:InvokedViaFunctionUrl", fmt.Sprint(v))
	}
	st := map[string]any{"Sid": id, "Effect": "Allow", "Principal": pr, "Action": str("Action"), "Resource": fn}
	if len(cond) > 0 {
		st["Condition"] = cond
	}
	return d.addResourceStatements(fn, id, map[string]any{"Version": "2012-10-17", "Statement": []any{st}})
}

func (d *deriver) region() string {
	if r := d.vals.Refs["AWS::Region"]; r != "" {
		return r
	}
	return "us-east-1"
}

// ConditionKeys lists the condition keys the model's policies use, each
// with where it is used, for a caller that checks it can supply them.
func (m *Model) ConditionKeys() map[string][]string {
	out := map[string][]string{}
	visit := func(p *iam.Policy) {
		for i, st := range p.Statements {
			for _, c := range st.Conditions {
				k := strings.ToLower(c.Key)
				out[k] = append(out[k], fmt.Sprintf("%s Statement[%d] %s %s", p.Name, i, c.Operator, c.Key))
			}
		}
	}
	for _, id := range sorted(m.Roles) {
		for _, p := range m.Roles[id].Policies {
			visit(p)
		}
	}
	for _, arn := range sorted(m.ResourcePolicies) {
		visit(m.ResourcePolicies[arn])
	}
	return out
}

func sorted[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
