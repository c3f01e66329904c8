package localtest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/mcpfn/mcpfn/catalog"
	"github.com/mcpfn/mcpfn/internal/project"
	"github.com/mcpfn/mcpfn/internal/samgen"
	"github.com/mcpfn/mcpfn/internal/samiam"
	"github.com/mcpfn/mcpfn/internal/samtemplate"
	"github.com/mcpfn/mcpfn/internal/secretsstandin"
)

// Local stand-ins for the facts CloudFormation knows and a laptop does not.
// The account is the all-zero one, which no real account has, so an ARN
// printed in a log can never be mistaken for a deployed resource.
const (
	localRegion  = "us-east-1"
	localAccount = "000000000000"
	gatewayID    = "GatewayFunction"
	typeFunction = "AWS::Serverless::Function"
	typeSecret   = "AWS::SecretsManager::Secret"
)

// localNames maps the template's resources to their local names, and
// resolves intrinsic functions against them with samtemplate's resolver: !Ref
// of a table, bucket or function is its local name, !GetAtt X.Arn a local
// ARN, !Ref of a parameter its Default.
type localNames struct {
	t       *samtemplate.Template
	tables  map[string]string // logical ID → local table name
	buckets map[string]string // logical ID → local bucket name
	vals    samtemplate.Values
}

// newLocalNames names tables after their logical IDs, and buckets after
// theirs in lower case (S3's bucket names have no capitals), each with a
// random suffix when the DynamoDB endpoint is shared with other stacks.
func newLocalNames(t *samtemplate.Template, unique bool) *localNames {
	n := &localNames{t: t, tables: map[string]string{}, buckets: map[string]string{}, vals: samtemplate.Values{
		Refs:  map[string]string{"AWS::Region": localRegion, "AWS::AccountId": localAccount},
		Attrs: map[string]string{},
	}}
	suffix := ""
	if unique {
		var b [4]byte
		_, _ = rand.Read(b[:])
		suffix = "-" + hex.EncodeToString(b[:])
	}
	for _, typ := range []string{samtemplate.TypeDynamoDBTable, samtemplate.TypeSimpleTable} {
		for _, id := range t.LogicalIDs(typ) {
			n.tables[id] = id + suffix
			n.vals.Refs[id] = id + suffix
			n.vals.Attrs[id+".Arn"] = "arn:aws:dynamodb:" + localRegion + ":" + localAccount + ":table/" + id + suffix
		}
	}
	for _, id := range t.LogicalIDs(samtemplate.TypeS3Bucket) {
		name := samiam.BucketName(id) + suffix
		n.buckets[id] = name
		n.vals.Refs[id] = name
		n.vals.Attrs[id+".Arn"] = samiam.BucketARN(name)
	}
	for _, id := range t.LogicalIDs(typeSecret) {
		n.vals.Refs[id] = secretsstandin.ARN(id)
	}
	for _, id := range t.LogicalIDs(typeFunction) {
		n.vals.Refs[id] = id
		n.vals.Attrs[id+".Arn"] = functionARN(id)
	}
	return n
}

func functionARN(name string) string {
	return "arn:aws:lambda:" + localRegion + ":" + localAccount + ":function:" + name
}

// value resolves v (a literal or an intrinsic in long form) to a string.
func (n *localNames) value(v any) (string, error) { return n.t.ResolveString(v, n.vals) }

// environment returns the resolved Environment.Variables of a function:
// Globals first, the function's own on top, as SAM merges them.
func (n *localNames) environment(logicalID string) (map[string]string, error) {
	env, err := n.t.FunctionEnvironment(logicalID, n.vals)
	if err != nil {
		return nil, err
	}
	for k, v := range env {
		env[k] = strings.TrimSpace(v)
	}
	return env, nil
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

// templateFunctions lists the template's functions the stack runs: every
// AWS::Serverless::Function except the gateway (mcpfn's own, gateway.go),
// named by logical ID. A tool function's package is the one the catalog
// names; the AgentCore interceptor is mcpfn's own, with the catalog beside
// it as deployed; any other function is functions/<dir>, as `mcpfn build`
// finds it; a function of the project's own without a Go main package at
// its CodeUri is skipped (it is built by a Makefile rule of the project's).
// toolOf maps a function to the tool the gateway's
// MCPFN_TOOL_FUNCTIONS routes to it.
func (n *localNames) templateFunctions(toolOf map[string]string, cat *catalog.File, catalogPath string) (specs []FunctionSpec, skipped []string, err error) {
	for _, id := range n.t.LogicalIDs(typeFunction) {
		if id == gatewayID {
			continue
		}
		env, err := n.environment(id)
		if err != nil {
			return nil, nil, err
		}
		for k, v := range n.loggingEnv(id) {
			if _, set := env[k]; !set {
				env[k] = v
			}
		}
		tool := toolOf[id]
		var pkg string
		switch {
		case id == interceptorID:
			pkg = interceptorPackage
			env[catalog.EnvPath] = catalogPath
		default:
			if e, ok := toolEntry(cat, id); ok {
				pkg = e.Package
			} else if pkg = n.ownFunction(id); pkg == "" {
				// Built by a Makefile rule of the project's own: not
				// something the stack knows how to build.
				skipped = append(skipped, id)
				continue
			}
		}
		specs = append(specs, FunctionSpec{
			Name:       id,
			LogicalID:  id,
			Package:    pkg,
			Tool:       tool,
			Env:        env,
			Timeout:    n.intProperty(id, "Timeout", 10),
			MemorySize: n.intProperty(id, "MemorySize", 256),
			// A reserved concurrency caps the pool like it caps Lambda.
			MaxConcurrency: n.intProperty(id, "ReservedConcurrentExecutions", 0),
		})
	}
	return specs, skipped, nil
}

// The AgentCore interceptor of mcpfn's skeleton and its code.
const (
	interceptorID      = "AgentCoreInterceptorFunction"
	interceptorPackage = "github.com/mcpfn/mcpfn/cmd/mcpfn-interceptor"
)

// ownFunction is the Go main package of a function of the project's own
// (its CodeUri's directory), "" when it has none.
func (n *localNames) ownFunction(logicalID string) string {
	r, _ := n.t.Resource(logicalID)
	codeURI, _ := r.Properties["CodeUri"].(string)
	return (&project.Project{Root: filepath.Dir(n.t.Path)}).OwnFunction(codeURI)
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

// commonEnvironment is what every function mcpfn generates gets
// (samgen.CommonEnvironment: the audit and tasks tables, …), resolved, with
// the LoggingConfig variables Lambda would set from Globals.
func (n *localNames) commonEnvironment() (map[string]string, error) {
	out := n.loggingEnv("")
	if len(out) == 0 {
		// mcpfn's functions log JSON (their LoggingConfig).
		out["AWS_LAMBDA_LOG_FORMAT"] = "JSON"
	}
	for _, e := range samgen.CommonEnvironment {
		s, err := n.value(map[string]any{"Ref": e.Ref})
		if err != nil {
			return nil, fmt.Errorf("template: %s: %w (run `mcpfn template`)", e.Name, err)
		}
		out[e.Name] = strings.TrimSpace(s)
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
