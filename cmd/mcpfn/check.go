package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpfn/mcpfn/catalog"
	"github.com/mcpfn/mcpfn/internal/project"
	"github.com/mcpfn/mcpfn/internal/samgen"
	"github.com/mcpfn/mcpfn/internal/samtemplate"
)

// widening are the resource types that can add to what a role may do or to
// who may invoke a function or read a secret, and the properties that name
// what they attach to.
var widening = map[string][]string{
	"AWS::IAM::Policy":                      {"Roles"},
	"AWS::IAM::ManagedPolicy":               {"Roles"},
	"AWS::IAM::RolePolicy":                  {"RoleName"},
	"AWS::Lambda::Permission":               {"FunctionName"},
	"AWS::SecretsManager::ResourcePolicy":   {"SecretId"},
	"AWS::Lambda::EventSourceMapping":       {"FunctionName"},
	"AWS::Lambda::EventInvokeConfig":        {"FunctionName"},
	"AWS::Lambda::Url":                      {"TargetFunctionArn"},
	"AWS::Serverless::Function":             {},
	"AWS::IAM::Role":                        {},
	"AWS::SecretsManager::RotationSchedule": {"SecretId"},
	// A bucket policy on mcpfn's payloads bucket, or one that names a
	// generated role (as principal or in a condition) on a bucket of the
	// project's.
	"AWS::S3::BucketPolicy": {"Bucket", "PolicyDocument"},
}

// rolesNotWidened checks the one thing a diff of the regions cannot: that no
// resource outside them grants mcpfn's generated roles more, lets more
// principals invoke the generated functions, or touches their call keys.
// Roles equal what the declarations generate; the local stack's IAM
// enforcement catches a grant the declaration forgot, at run time.
func rolesNotWidened(tmpl []byte) error {
	t, err := samtemplate.Parse(tmpl)
	if err != nil {
		return err
	}
	generated, err := generatedIDs(tmpl)
	if err != nil {
		return err
	}
	var errs []error
	for _, typ := range sortedTypes() {
		for _, id := range t.LogicalIDs(typ) {
			if generated[id] {
				continue
			}
			r, _ := t.Resource(id)
			for _, prop := range widening[typ] {
				for _, target := range referenced(r.Properties[prop]) {
					if generated[target] {
						errs = append(errs, fmt.Errorf("%s (%s) attaches to %s, which mcpfn generates: a tool's role and invokers are what its declaration says; declare the access on the tool instead (Tables, Buckets) and run `mcpfn template`", id, typ, target))
					}
				}
			}
		}
	}
	return errors.Join(errs...)
}

// generatedIDs are the logical ids of everything mcpfn's regions define,
// with the roles SAM derives from their functions.
func generatedIDs(tmpl []byte) (map[string]bool, error) {
	regions, err := samgen.GeneratedResources(tmpl)
	if err != nil {
		return nil, err
	}
	ids := map[string]bool{}
	for id := range regions {
		ids[id] = true
		if strings.HasSuffix(id, "Function") {
			ids[id+"Role"] = true
		}
	}
	return ids, nil
}

// referenced returns the logical ids a property value refers to: !Ref X,
// !GetAtt X.Attr, ${X} and ${X.Attr} in !Sub, and plain strings.
func referenced(v any) []string {
	var out []string
	switch x := v.(type) {
	case string:
		out = append(out, x)
		for _, part := range strings.Split(x, "${")[1:] {
			name, _, _ := strings.Cut(part, "}")
			name, _, _ = strings.Cut(name, ".")
			out = append(out, name)
		}
	case []any:
		for _, e := range x {
			out = append(out, referenced(e)...)
		}
	case map[string]any:
		for k, e := range x {
			switch k {
			case "Fn::GetAtt":
				if l, ok := e.([]any); ok && len(l) > 0 {
					out = append(out, fmt.Sprint(l[0]))
				} else if s, ok := e.(string); ok {
					name, _, _ := strings.Cut(s, ".")
					out = append(out, name)
				}
			default:
				out = append(out, referenced(e)...)
			}
		}
	}
	return out
}

func sortedTypes() []string {
	out := make([]string, 0, len(widening))
	for t := range widening {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// eventsPresent: every tool has its events/<tool>.json (`mcpfn template`
// writes a missing one).
func eventsPresent(p *project.Project, cat *catalog.File) error {
	var missing []string
	for _, e := range cat.Tools {
		if _, err := os.Stat(filepath.Join(p.Root, eventsDir, e.Tool.Name+".json")); err != nil {
			missing = append(missing, e.Tool.Name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("no %s/<tool>.json for %s: run `mcpfn template`", eventsDir, strings.Join(missing, ", "))
	}
	return nil
}
