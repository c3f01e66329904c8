package samtemplate

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Values are what a local run knows about the resources CloudFormation
// would have created, for Resolve to substitute.
type Values struct {
	// Refs maps a logical ID, parameter or pseudo parameter to what Ref
	// returns for it: a table's local name for a table, a function's name
	// for a function. Entries override parameter defaults and the pseudo
	// parameter values below.
	Refs map[string]string
	// Attrs maps "LogicalID.Attribute" to what Fn::GetAtt returns.
	Attrs map[string]string
}

// Local values of the pseudo parameters, used when Values.Refs does not
// name them. The account id is the one AWS reserves for documentation, so a
// resolved ARN can never point at a real account.
var pseudoDefaults = map[string]string{
	"AWS::Region":    "us-east-1",
	"AWS::AccountId": "123456789012",
	"AWS::StackName": "mcpfn-local",
	"AWS::StackId":   "arn:aws:cloudformation:us-east-1:123456789012:stack/mcpfn-local/00000000-0000-0000-0000-000000000000",
	"AWS::Partition": "aws",
	"AWS::URLSuffix": "amazonaws.com",
}

// errNoValue marks a Ref to AWS::NoValue: the enclosing key is dropped.
var errNoValue = errors.New("AWS::NoValue")

// Resolve evaluates the intrinsic functions in v that a local run can: Ref,
// Fn::GetAtt, Fn::Sub, Fn::Join, Fn::Select, Fn::Split and Fn::If on a
// condition given as true or false in Values.Refs (CloudFormation conditions
// themselves are not evaluated). A Ref that neither Values nor a parameter
// default answers is an error, so a missing local resource is reported
// instead of silently becoming an empty string.
func (t *Template) Resolve(v any, vals Values) (any, error) {
	out, err := t.resolveValue(v, vals, 0)
	if errors.Is(err, errNoValue) {
		return nil, nil
	}
	return out, err
}

func (t *Template) resolveValue(v any, vals Values, depth int) (any, error) {
	if depth > maxDepth {
		return nil, errors.New("intrinsics nested too deeply")
	}
	if fn, arg, ok := Intrinsic(v); ok {
		return t.intrinsic(fn, arg, vals, depth+1)
	}
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			r, err := t.resolveValue(e, vals, depth+1)
			if errors.Is(err, errNoValue) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, 0, len(x))
		for i, e := range x {
			r, err := t.resolveValue(e, vals, depth+1)
			if errors.Is(err, errNoValue) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out = append(out, r)
		}
		return out, nil
	}
	return v, nil
}

func (t *Template) ref(name string, vals Values) (string, error) {
	if name == "AWS::NoValue" {
		return "", errNoValue
	}
	if v, ok := vals.Refs[name]; ok {
		return v, nil
	}
	if d, ok := t.ParameterDefault(name); ok {
		return scalarString(d), nil
	}
	if v, ok := pseudoDefaults[name]; ok {
		return v, nil
	}
	return "", fmt.Errorf("no local value for Ref %s (Values.Refs) and no parameter default", name)
}

// subVar matches ${Name} and ${Name.Attr} in Fn::Sub strings; ${!Literal}
// is CloudFormation's escape and stays as ${Literal}.
var subVar = regexp.MustCompile(`\$\{([^}]*)\}`)

func (t *Template) intrinsic(fn string, arg any, vals Values, depth int) (any, error) {
	switch fn {
	case "Ref":
		name, ok := arg.(string)
		if !ok {
			return nil, fmt.Errorf("the argument of Ref must be a name, got %v", arg)
		}
		return t.ref(name, vals)

	case "Fn::GetAtt":
		parts, ok := arg.([]any)
		if !ok || len(parts) != 2 {
			return nil, fmt.Errorf("Fn::GetAtt: want [resource, attribute], got %v", arg)
		}
		key := fmt.Sprint(parts[0]) + "." + fmt.Sprint(parts[1])
		if v, ok := vals.Attrs[key]; ok {
			return v, nil
		}
		return nil, fmt.Errorf("Fn::GetAtt %s: no local value (Values.Attrs)", key)

	case "Fn::Sub":
		text, extra := arg, map[string]any{}
		if list, ok := arg.([]any); ok && len(list) == 2 {
			text = list[0]
			m, _ := list[1].(map[string]any)
			for k, e := range m {
				r, err := t.resolveValue(e, vals, depth)
				if err != nil {
					return nil, fmt.Errorf("Fn::Sub %s: %w", k, err)
				}
				extra[k] = r
			}
		}
		s, ok := text.(string)
		if !ok {
			return nil, fmt.Errorf("Fn::Sub: want a string, got %v", text)
		}
		var firstErr error
		out := subVar.ReplaceAllStringFunc(s, func(m string) string {
			name := m[2 : len(m)-1]
			if strings.HasPrefix(name, "!") {
				return "${" + name[1:] + "}"
			}
			if v, ok := extra[name]; ok {
				return scalarString(v)
			}
			var v string
			var err error
			if res, attr, isAttr := strings.Cut(name, "."); isAttr && !strings.HasPrefix(name, "AWS::") {
				var r any
				r, err = t.intrinsic("Fn::GetAtt", []any{res, attr}, vals, depth)
				v = scalarString(r)
			} else {
				v, err = t.ref(name, vals)
			}
			if err != nil && firstErr == nil {
				firstErr = fmt.Errorf("Fn::Sub: %w", err)
			}
			return v
		})
		return out, firstErr

	case "Fn::Join":
		list, ok := arg.([]any)
		if !ok || len(list) != 2 {
			return nil, fmt.Errorf("Fn::Join: want [delimiter, list], got %v", arg)
		}
		items, err := t.resolveValue(list[1], vals, depth)
		if err != nil {
			return nil, fmt.Errorf("Fn::Join: %w", err)
		}
		parts, ok := items.([]any)
		if !ok {
			return nil, fmt.Errorf("Fn::Join: want a list, got %v", items)
		}
		strs := make([]string, len(parts))
		for i, p := range parts {
			strs[i] = scalarString(p)
		}
		return strings.Join(strs, fmt.Sprint(list[0])), nil

	case "Fn::Select":
		list, ok := arg.([]any)
		if !ok || len(list) != 2 {
			return nil, fmt.Errorf("Fn::Select: want [index, list], got %v", arg)
		}
		idx, err := strconv.Atoi(scalarString(list[0]))
		if err != nil {
			return nil, fmt.Errorf("Fn::Select: index %v", list[0])
		}
		items, err := t.resolveValue(list[1], vals, depth)
		if err != nil {
			return nil, fmt.Errorf("Fn::Select: %w", err)
		}
		parts, ok := items.([]any)
		if !ok || idx < 0 || idx >= len(parts) {
			return nil, fmt.Errorf("Fn::Select: index %d out of %v", idx, items)
		}
		return parts[idx], nil

	case "Fn::Split":
		list, ok := arg.([]any)
		if !ok || len(list) != 2 {
			return nil, fmt.Errorf("Fn::Split: want [delimiter, string], got %v", arg)
		}
		s, err := t.resolveValue(list[1], vals, depth)
		if err != nil {
			return nil, fmt.Errorf("Fn::Split: %w", err)
		}
		var out []any
		for _, p := range strings.Split(scalarString(s), fmt.Sprint(list[0])) {
			out = append(out, p)
		}
		return out, nil

	case "Fn::If":
		list, ok := arg.([]any)
		if !ok || len(list) != 3 {
			return nil, fmt.Errorf("Fn::If: want [condition, then, else], got %v", arg)
		}
		cond := fmt.Sprint(list[0])
		switch vals.Refs[cond] {
		case "true":
			return t.resolveValue(list[1], vals, depth)
		case "false":
			return t.resolveValue(list[2], vals, depth)
		}
		return nil, fmt.Errorf("Fn::If: condition %s is not given as true or false in Values.Refs", cond)
	}
	return nil, fmt.Errorf("%s: not evaluated locally", fn)
}

// ResolveString is Resolve for a value that must end up a scalar (an
// environment variable, a property such as Timeout), rendered as
// CloudFormation passes it on.
func (t *Template) ResolveString(v any, vals Values) (string, error) {
	out, err := t.Resolve(v, vals)
	if err != nil {
		return "", err
	}
	switch out.(type) {
	case map[string]any, []any:
		return "", fmt.Errorf("samtemplate: %v resolves to %v, not a scalar", v, out)
	}
	return scalarString(out), nil
}

// scalarString renders a resolved scalar the way CloudFormation passes it
// on: numbers and booleans as their text.
func scalarString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

// TypeServerlessFunction is the SAM function resource type.
const TypeServerlessFunction = "AWS::Serverless::Function"

// FunctionEnvironment returns the environment variables the function
// logicalID gets when deployed: for a SAM function,
// Globals.Function.Environment.Variables overlaid with the function's own
// (SAM merges the two maps, the function winning), every value resolved
// with Resolve. A variable whose value is a
// Ref to AWS::NoValue is left out.
func (t *Template) FunctionEnvironment(logicalID string, vals Values) (map[string]string, error) {
	r, ok := t.resources[logicalID]
	if !ok {
		return nil, fmt.Errorf("samtemplate: no resource %s", logicalID)
	}
	merged := map[string]any{}
	// Globals are a SAM feature: a plain AWS::Lambda::Function gets none.
	if g, ok := t.Globals["Function"].(map[string]any); ok && r.Type == TypeServerlessFunction {
		maps.Copy(merged, variables(g))
	}
	maps.Copy(merged, variables(r.Properties))

	env := make(map[string]string, len(merged))
	names := make([]string, 0, len(merged))
	for k := range merged {
		names = append(names, k)
	}
	sort.Strings(names) // deterministic error for the first bad variable
	for _, k := range names {
		v, err := t.resolveValue(merged[k], vals, 0)
		if errors.Is(err, errNoValue) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("samtemplate: %s environment %s: %w", logicalID, k, err)
		}
		switch v.(type) {
		case map[string]any, []any:
			return nil, fmt.Errorf("samtemplate: %s environment %s: resolves to %v, not a scalar", logicalID, k, v)
		}
		env[k] = scalarString(v)
	}
	return env, nil
}

func variables(props map[string]any) map[string]any {
	e, _ := props["Environment"].(map[string]any)
	v, _ := e["Variables"].(map[string]any)
	return v
}
