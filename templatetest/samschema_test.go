package templatetest

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/internal/samtemplate"
)

// @aws/cloudformation-validate checks CloudFormation resources against their
// schemas and runs some of the SAM transform's checks, but (1.9.0) it reads
// no resource attribute beside Type and Properties, and it accepts an
// AWS::Serverless::Function property SAM does not define or one of the wrong
// kind. The two checks here close that gap, and no more: a misspelt
// resource attribute (`Condtion`), or a function property SAM does not
// define or of the wrong kind (`MemorySize: lots`), fails in the tests
// instead of at `sam deploy`. (goformation checked both by decoding into
// its types until 0026 dropped it.)

// resourceAttributes are the keys CloudFormation allows in a resource
// beside Type and Properties.
var resourceAttributes = []string{
	"Condition", "CreationPolicy", "DeletionPolicy", "DependsOn", "Metadata",
	"UpdatePolicy", "UpdateReplacePolicy",
}

// valueKind is the shape a SAM property's value has in the template.
type valueKind int

const (
	kindString valueKind = 1 << iota
	kindInt
	kindBool
	kindList
	kindMap
)

func (k valueKind) String() string {
	var names []string
	for _, n := range []struct {
		k    valueKind
		name string
	}{{kindString, "string"}, {kindInt, "integer"}, {kindBool, "boolean"}, {kindList, "list"}, {kindMap, "mapping"}} {
		if k&n.k != 0 {
			names = append(names, n.name)
		}
	}
	return strings.Join(names, " or ")
}

// kindOf is the kind of a template value; an intrinsic ({"Ref": …},
// {"Fn::If": …}) fits every kind, as CloudFormation resolves it first.
func kindOf(v any) valueKind {
	if _, _, ok := samtemplate.Intrinsic(v); ok {
		return kindString | kindInt | kindBool | kindList | kindMap
	}
	switch v.(type) {
	case string:
		return kindString
	case int:
		return kindInt
	case bool:
		return kindBool
	case []any:
		return kindList
	case map[string]any:
		return kindMap
	}
	return 0
}

// samFunctionProperties are the properties of AWS::Serverless::Function as
// the SAM specification documents them, by path ("Environment.Variables"),
// with the kinds of value each takes. A mapping with children listed here is
// closed (only those keys); one without (Events, Tags, DeploymentPreference
// …) is not checked inside. When SAM adds a property the template needs,
// add it here after checking its name in the SAM documentation.
var samFunctionProperties = map[string]valueKind{
	"Architectures":                              kindList,
	"AssumeRolePolicyDocument":                   kindMap,
	"AutoPublishAlias":                           kindString,
	"AutoPublishAliasAllProperties":              kindBool,
	"AutoPublishCodeSha256":                      kindString,
	"CodeSigningConfigArn":                       kindString,
	"CodeUri":                                    kindString | kindMap,
	"DeadLetterQueue":                            kindMap,
	"DeadLetterQueue.TargetArn":                  kindString,
	"DeadLetterQueue.Type":                       kindString,
	"DeploymentPreference":                       kindMap,
	"Description":                                kindString,
	"Environment":                                kindMap,
	"Environment.Variables":                      kindMap,
	"EphemeralStorage":                           kindMap,
	"EphemeralStorage.Size":                      kindInt,
	"EventInvokeConfig":                          kindMap,
	"EventInvokeConfig.DestinationConfig":        kindMap,
	"EventInvokeConfig.MaximumEventAgeInSeconds": kindInt,
	"EventInvokeConfig.MaximumRetryAttempts":     kindInt,
	"Events":                                     kindMap,
	"FileSystemConfigs":                          kindList,
	"FunctionName":                               kindString,
	"FunctionUrlConfig":                          kindMap,
	"FunctionUrlConfig.AuthType":                 kindString,
	"FunctionUrlConfig.Cors":                     kindMap,
	"FunctionUrlConfig.InvokeMode":               kindString,
	"Handler":                                    kindString,
	"ImageConfig":                                kindMap,
	"ImageUri":                                   kindString,
	"InlineCode":                                 kindString,
	"KmsKeyArn":                                  kindString,
	"Layers":                                     kindList,
	"LoggingConfig":                              kindMap,
	"LoggingConfig.ApplicationLogLevel":          kindString,
	"LoggingConfig.LogFormat":                    kindString,
	"LoggingConfig.LogGroup":                     kindString,
	"LoggingConfig.SystemLogLevel":               kindString,
	"MemorySize":                                 kindInt,
	"PackageType":                                kindString,
	"PermissionsBoundary":                        kindString,
	"Policies":                                   kindString | kindList | kindMap,
	"PropagateTags":                              kindBool,
	"ProvisionedConcurrencyConfig":               kindMap,
	"RecursiveLoop":                              kindString,
	"ReservedConcurrentExecutions":               kindInt,
	"Role":                                       kindString,
	"RolePath":                                   kindString,
	"Runtime":                                    kindString,
	"RuntimeManagementConfig":                    kindMap,
	"SnapStart":                                  kindMap,
	"SnapStart.ApplyOn":                          kindString,
	"SourceKMSKeyArn":                            kindString,
	"Tags":                                       kindMap,
	"Timeout":                                    kindInt,
	"Tracing":                                    kindString,
	"VersionDescription":                         kindString,
	"VpcConfig":                                  kindMap,
	"VpcConfig.Ipv6AllowedForDualStack":          kindBool,
	"VpcConfig.SecurityGroupIds":                 kindList,
	"VpcConfig.SubnetIds":                        kindList,
}

// closed reports whether the mapping at path has its keys listed.
func closed(path string) bool {
	for p := range samFunctionProperties {
		if strings.HasPrefix(p, path+".") {
			return true
		}
	}
	return false
}

// samPropertyProblems checks one function's properties (or the Globals'
// Function section) against samFunctionProperties; where names the
// function ("resource GatewayFunction") in each problem.
func samPropertyProblems(where string, props map[string]any) []string {
	var problems []string
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			path := k
			if prefix != "" {
				path = prefix + "." + k
			}
			want, ok := samFunctionProperties[path]
			if !ok {
				problems = append(problems, fmt.Sprintf("%s: %s is not a property of %s", where, path, serverlessFunction))
				continue
			}
			v := m[k]
			if kindOf(v)&want == 0 {
				problems = append(problems, fmt.Sprintf("%s: %s is %v; SAM takes a value of kind %s", where, path, v, want))
				continue
			}
			if sub, isMap := v.(map[string]any); isMap && closed(path) {
				walk(path, sub)
			}
		}
	}
	walk("", props)
	return problems
}

// knownProblems returns what the two checks find in tpl: resource
// attributes CloudFormation does not define, and function properties (in
// Globals too) SAM does not define or whose value is of the wrong kind.
func knownProblems(tpl *samtemplate.Template) []string {
	var problems []string
	for _, id := range tpl.LogicalIDs("") {
		r, _ := tpl.Resource(id)
		for _, a := range slices.Sorted(maps.Keys(r.Attributes)) {
			if !slices.Contains(resourceAttributes, a) {
				problems = append(problems, fmt.Sprintf("resource %s: %s is not a resource attribute (want one of %s)", id, a, strings.Join(resourceAttributes, ", ")))
			}
		}
		if r.Type == serverlessFunction {
			problems = append(problems, samPropertyProblems("resource "+id, r.Properties)...)
		}
	}
	if g, ok := tpl.Globals["Function"].(map[string]any); ok {
		problems = append(problems, samPropertyProblems("Globals", g)...)
	}
	return problems
}

// TestTemplateUsesKnownAttributesAndSAMProperties: template.yaml's resources
// carry only CloudFormation's resource attributes, and its functions only
// the properties SAM defines, each with a value of the kind SAM takes.
func TestTemplateUsesKnownAttributesAndSAMProperties(t *testing.T) {
	rt := raw(t)
	if len(rt.LogicalIDs(serverlessFunction)) == 0 {
		t.Fatalf("no %s resources", serverlessFunction)
	}
	for _, p := range knownProblems(rt) {
		t.Error(p)
	}
}

// TestKnownProblemsAreFound: the checks have teeth — each kind of mistake in
// a small template is reported, and nothing else is.
func TestKnownProblemsAreFound(t *testing.T) {
	tpl, err := samtemplate.Parse([]byte(`
Transform: AWS::Serverless-2016-10-31
Globals:
  Function:
    Timeout: "ten"
Resources:
  Fn:
    Type: AWS::Serverless::Function
    Condtion: Deploy
    Metadata: {BuildMethod: makefile}
    Properties:
      Handler: bootstrap
      MemorySize: lots
      Enviroment: {Variables: {A: b}}
      LoggingConfig: {LogFormat: JSON, Format: JSON}
      FunctionUrlConfig:
        AuthType: !If [Open, NONE, AWS_IAM]
        InvokeMode: RESPONSE_STREAM
      Events: {Anything: {Type: Whatever}}
      Timeout: !Ref Seconds
  Queue:
    Type: AWS::SQS::Queue
    DeletionPolicy: Retain
    Propertys: {}
`))
	if err != nil {
		t.Fatal(err)
	}
	got := knownProblems(tpl)
	want := []string{
		"resource Fn: Condtion is not a resource attribute",
		"resource Fn: Enviroment is not a property of " + serverlessFunction,
		"resource Fn: LoggingConfig.Format is not a property of " + serverlessFunction,
		"resource Fn: MemorySize is lots; SAM takes a value of kind integer",
		"resource Queue: Propertys is not a resource attribute",
		"Globals: Timeout is ten; SAM takes a value of kind integer",
	}
	if len(got) != len(want) {
		t.Errorf("found %d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for _, w := range want {
		if !slices.ContainsFunc(got, func(p string) bool { return strings.HasPrefix(p, w) }) {
			t.Errorf("not found: %s\ngot:\n%s", w, strings.Join(got, "\n"))
		}
	}
}
