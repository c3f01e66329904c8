package localtest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/mcpfn/mcpfn/internal/samtemplate"
)

// Local stand-ins for the facts CloudFormation knows and a laptop does not.
// The account is the all-zero one, which no real account has, so an ARN
// printed in a log can never be mistaken for a deployed resource.
const (
	localRegion  = "us-east-1"
	localAccount = "000000000000"
	gatewayID    = "GatewayFunction"
	typeFunction = "AWS::Serverless::Function"
)

// localNames maps the template's resources to their local names and
// resolves intrinsic functions against them: !Ref of a table or function is
// its local name, !GetAtt X.Arn a local ARN, !Ref of a parameter its Default,
// and !Sub both.
type localNames struct {
	t      *samtemplate.Template
	tables map[string]string // logical ID → local table name
}

// newLocalNames names tables after their logical IDs, with a random suffix
// when the DynamoDB endpoint is shared with other stacks.
func newLocalNames(t *samtemplate.Template, unique bool) *localNames {
	n := &localNames{t: t, tables: map[string]string{}}
	suffix := ""
	if unique {
		var b [4]byte
		_, _ = rand.Read(b[:])
		suffix = "-" + hex.EncodeToString(b[:])
	}
	for _, typ := range []string{samtemplate.TypeDynamoDBTable, samtemplate.TypeSimpleTable} {
		for _, id := range t.LogicalIDs(typ) {
			n.tables[id] = id + suffix
		}
	}
	return n
}

// ref is what !Ref (attr "") or !GetAtt (attr set) of a logical ID
// resolves to locally.
func (n *localNames) ref(id, attr string) (string, error) {
	if name, ok := n.tables[id]; ok {
		switch attr {
		case "":
			return name, nil
		case "Arn":
			return "arn:aws:dynamodb:" + localRegion + ":" + localAccount + ":table/" + name, nil
		}
		return "", fmt.Errorf("attribute %s of table %s has no local value", attr, id)
	}
	if r, ok := n.t.Resource(id); ok && r.Type == typeFunction {
		switch attr {
		case "":
			return id, nil
		case "Arn":
			return functionARN(id), nil
		}
		return "", fmt.Errorf("attribute %s of function %s has no local value", attr, id)
	}
	if attr == "" {
		switch id {
		case "AWS::Region":
			return localRegion, nil
		case "AWS::AccountId":
			return localAccount, nil
		case "AWS::Partition":
			return "aws", nil
		case "AWS::StackName":
			return "mcpfn-local", nil
		case "AWS::URLSuffix":
			return "amazonaws.com", nil
		}
		if d, ok := n.t.ParameterDefault(id); ok {
			return scalar(d), nil
		}
		if _, ok := n.t.Parameters[id]; ok {
			return "", fmt.Errorf("parameter %s has no Default", id)
		}
	}
	return "", fmt.Errorf("no local value for %s%s", id, map[bool]string{true: "." + attr}[attr != ""])
}

func functionARN(name string) string {
	return "arn:aws:lambda:" + localRegion + ":" + localAccount + ":function:" + name
}

var subVar = regexp.MustCompile(`\$\{([^}!][^}]*)\}`)

// value resolves v (a literal or an intrinsic in long form) to a string.
func (n *localNames) value(v any) (string, error) {
	fn, arg, ok := samtemplate.Intrinsic(v)
	if !ok {
		if _, isMap := v.(map[string]any); isMap {
			return "", fmt.Errorf("unsupported value %v", v)
		}
		return scalar(v), nil
	}
	switch fn {
	case "Ref":
		id, _ := arg.(string)
		return n.ref(id, "")
	case "Fn::GetAtt":
		parts, _ := arg.([]any)
		if len(parts) != 2 {
			return "", fmt.Errorf("malformed Fn::GetAtt %v", arg)
		}
		return n.ref(scalar(parts[0]), scalar(parts[1]))
	case "Fn::Sub":
		s, ok := arg.(string)
		if !ok {
			// The two-argument form with its own variable map is not
			// used by the template; fail loudly rather than guess.
			return "", fmt.Errorf("Fn::Sub with a variable map is not supported locally")
		}
		var err error
		out := subVar.ReplaceAllStringFunc(s, func(m string) string {
			name := m[2 : len(m)-1]
			id, attr, _ := strings.Cut(name, ".")
			if strings.HasPrefix(name, "AWS::") {
				id, attr = name, ""
			}
			r, e := n.ref(id, attr)
			if e != nil && err == nil {
				err = e
			}
			return r
		})
		// ${!Literal} is Sub's escape for a literal ${Literal}.
		out = strings.ReplaceAll(out, "${!", "${")
		return out, err
	}
	return "", fmt.Errorf("intrinsic %s is not supported locally", fn)
}

func scalar(v any) string {
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

// environment returns the resolved Environment.Variables of a function:
// Globals first, the function's own on top, as SAM merges them.
func (n *localNames) environment(logicalID string) (map[string]string, error) {
	r, ok := n.t.Resource(logicalID)
	if !ok {
		return nil, fmt.Errorf("template.yaml has no resource %s", logicalID)
	}
	raw := map[string]any{}
	if g, ok := n.t.Globals["Function"].(map[string]any); ok {
		maps.Copy(raw, envVars(g))
	}
	maps.Copy(raw, envVars(r.Properties))
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		s, err := n.value(v)
		if err != nil {
			return nil, fmt.Errorf("%s: environment variable %s: %w", logicalID, k, err)
		}
		out[k] = strings.TrimSpace(s)
	}
	return out, nil
}

func envVars(props map[string]any) map[string]any {
	env, _ := props["Environment"].(map[string]any)
	vars, _ := env["Variables"].(map[string]any)
	return vars
}

// intProperty returns a function's numeric property (Timeout, MemorySize),
// its own or from Globals, resolving a !Ref to a parameter's Default.
func (n *localNames) intProperty(logicalID, prop string, def int) int {
	r, _ := n.t.Resource(logicalID)
	v, ok := r.Properties[prop]
	if !ok {
		g, _ := n.t.Globals["Function"].(map[string]any)
		if v, ok = g[prop]; !ok {
			return def
		}
	}
	s, err := n.value(v)
	if err != nil {
		return def
	}
	i, err := strconv.Atoi(s)
	if err != nil || i <= 0 {
		return def
	}
	return i
}

// templateFunctions lists the template's tool functions: every
// AWS::Serverless::Function except the gateway, named by logical ID. The
// package of each is functions/<tool>, the tool being the one the gateway's
// MCPFN_TOOL_FUNCTIONS maps to it (or the logical ID in snake case without
// "Function" for a function no tool names).
func (n *localNames) templateFunctions(toolOf map[string]string) ([]FunctionSpec, error) {
	var specs []FunctionSpec
	for _, id := range n.t.LogicalIDs(typeFunction) {
		if id == gatewayID {
			continue
		}
		env, err := n.environment(id)
		if err != nil {
			return nil, err
		}
		for k, v := range n.loggingEnv(id) {
			if _, set := env[k]; !set {
				env[k] = v
			}
		}
		tool := toolOf[id]
		pkg := tool
		if pkg == "" {
			pkg = snake(strings.TrimSuffix(id, "Function"))
		}
		specs = append(specs, FunctionSpec{
			Name:       id,
			LogicalID:  id,
			Package:    "./functions/" + pkg,
			Tool:       tool,
			Env:        env,
			Timeout:    n.intProperty(id, "Timeout", 10),
			MemorySize: n.intProperty(id, "MemorySize", 256),
			// A reserved concurrency caps the pool like it caps Lambda.
			MaxConcurrency: n.intProperty(id, "ReservedConcurrentExecutions", 0),
		})
	}
	return specs, nil
}

// snake turns BroadcastCreate into broadcast_create.
func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// sortedKeys is for deterministic environments and messages.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// globalEnvironment is Globals.Function.Environment.Variables, resolved,
// with the Globals LoggingConfig variables Lambda would set.
func (n *localNames) globalEnvironment() (map[string]string, error) {
	g, _ := n.t.Globals["Function"].(map[string]any)
	out := n.loggingEnv("")
	for k, v := range envVars(g) {
		s, err := n.value(v)
		if err != nil {
			return nil, fmt.Errorf("template Globals: environment variable %s: %w", k, err)
		}
		out[k] = strings.TrimSpace(s)
	}
	return out, nil
}

// loggingEnv is what Lambda sets from a function's LoggingConfig (its own,
// else Globals'): AWS_LAMBDA_LOG_FORMAT, and with JSON the application log
// level. aws-lambda-go's lambdacontext logger reads both. logicalID "" reads
// Globals only.
func (n *localNames) loggingEnv(logicalID string) map[string]string {
	var cfg map[string]any
	if r, ok := n.t.Resource(logicalID); ok {
		cfg, _ = r.Properties["LoggingConfig"].(map[string]any)
	}
	if cfg == nil {
		g, _ := n.t.Globals["Function"].(map[string]any)
		cfg, _ = g["LoggingConfig"].(map[string]any)
	}
	out := map[string]string{}
	format, _ := n.value(cfg["LogFormat"])
	if format == "" {
		return out
	}
	out["AWS_LAMBDA_LOG_FORMAT"] = format
	if format == "JSON" {
		if level, _ := n.value(cfg["ApplicationLogLevel"]); level != "" {
			out["AWS_LAMBDA_LOG_LEVEL"] = level
		}
	}
	return out
}
