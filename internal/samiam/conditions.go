package samiam

import (
	"fmt"
	"strings"

	"github.com/mcpfn/mcpfn/internal/samtemplate"
)

// Conditions evaluates the template's Conditions (Fn::Equals, Fn::Not,
// Fn::And, Fn::Or, Condition, Ref of parameters and pseudo parameters)
// with params over the parameters' defaults, as CloudFormation evaluates
// them at deployment.
func Conditions(t *samtemplate.Template, params map[string]string) (map[string]bool, error) {
	e := &condEval{t: t, params: params, done: map[string]bool{}, busy: map[string]bool{}}
	for _, name := range sorted(t.Conditions) {
		if _, err := e.named(name); err != nil {
			return nil, err
		}
	}
	return e.done, nil
}

type condEval struct {
	t      *samtemplate.Template
	params map[string]string
	done   map[string]bool
	busy   map[string]bool
}

func (e *condEval) named(name string) (bool, error) {
	if v, ok := e.done[name]; ok {
		return v, nil
	}
	def, ok := e.t.Conditions[name]
	if !ok {
		return false, fmt.Errorf("samiam: no condition %s", name)
	}
	if e.busy[name] {
		return false, fmt.Errorf("samiam: condition %s refers to itself", name)
	}
	e.busy[name] = true
	v, err := e.eval(def)
	if err != nil {
		return false, fmt.Errorf("samiam: condition %s: %w", name, err)
	}
	e.done[name] = v
	return v, nil
}

func (e *condEval) eval(v any) (bool, error) {
	fn, arg, ok := samtemplate.Intrinsic(v)
	if !ok {
		return false, fmt.Errorf("%v is not a condition function", v)
	}
	list, _ := arg.([]any)
	switch fn {
	case "Condition":
		s, _ := arg.(string)
		return e.named(s)
	case "Fn::Not":
		if len(list) != 1 {
			return false, fmt.Errorf("Fn::Not takes one condition")
		}
		b, err := e.eval(list[0])
		return !b, err
	case "Fn::And", "Fn::Or":
		if len(list) == 0 {
			return false, fmt.Errorf("%s takes conditions", fn)
		}
		for _, c := range list {
			b, err := e.eval(c)
			if err != nil {
				return false, err
			}
			if fn == "Fn::And" && !b {
				return false, nil
			}
			if fn == "Fn::Or" && b {
				return true, nil
			}
		}
		return fn == "Fn::And", nil
	case "Fn::Equals":
		if len(list) != 2 {
			return false, fmt.Errorf("Fn::Equals takes two values")
		}
		a, err := e.value(list[0])
		if err != nil {
			return false, err
		}
		b, err := e.value(list[1])
		return a == b, err
	}
	return false, fmt.Errorf("%s is not evaluated locally", fn)
}

func (e *condEval) value(v any) (string, error) {
	vals := samtemplate.Values{Refs: map[string]string{}}
	for k, p := range e.params {
		vals.Refs[k] = p
	}
	return e.t.ResolveString(v, vals)
}

// LocalValues are the values a local run resolves the template with: the
// tables, functions and secrets named by their logical ids (ARNs in account
// and region, a secret's without AWS's random suffix), and every condition
// evaluated from the parameters' defaults, conds overriding.
func LocalValues(t *samtemplate.Template, account, region string, conds map[string]bool) samtemplate.Values {
	v := samtemplate.Values{
		Refs:  map[string]string{"AWS::Region": region, "AWS::AccountId": account},
		Attrs: map[string]string{},
	}
	for _, typ := range []string{typeDynamoDBTable, samtemplate.TypeSimpleTable} {
		for _, id := range t.LogicalIDs(typ) {
			v.Refs[id] = id
			v.Attrs[id+".Arn"] = "arn:aws:dynamodb:" + region + ":" + account + ":table/" + id
		}
	}
	for _, id := range t.LogicalIDs(samtemplate.TypeS3Bucket) {
		v.Refs[id] = BucketName(id)
		v.Attrs[id+".Arn"] = BucketARN(BucketName(id))
	}
	for _, id := range t.LogicalIDs("AWS::SecretsManager::Secret") {
		v.Refs[id] = "arn:aws:secretsmanager:" + region + ":" + account + ":secret:" + id
	}
	for _, id := range t.LogicalIDs(typeFunction) {
		v.Refs[id] = id
		v.Attrs[id+".Arn"] = "arn:aws:lambda:" + region + ":" + account + ":function:" + id
	}
	evaluated, _ := Conditions(t, nil)
	for name, b := range evaluated {
		v.Refs[name] = fmt.Sprint(b)
	}
	for name, b := range conds {
		v.Refs[name] = fmt.Sprint(b)
	}
	return v
}

// BucketName is the name a bucket of the template has locally: its
// logical id in lower case (S3's bucket names have no capitals).
func BucketName(logicalID string) string { return strings.ToLower(logicalID) }

// BucketARN is the ARN of the bucket named name (S3's ARNs name neither a
// region nor an account).
func BucketARN(name string) string { return "arn:aws:s3:::" + name }
