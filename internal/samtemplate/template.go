// Package samtemplate reads the SAM template (template.yaml) so that local
// runs and tests build their resources from the same definitions that are
// deployed: DynamoDB Local tables from AWS::DynamoDB::Table resources, and
// function environments from AWS::Serverless::Function properties.
//
// It is a reader, not a CloudFormation engine. CloudFormation's short-form
// tags (!Ref, !Sub, !GetAtt, …), which generic YAML decoders reject, are
// turned into their long, JSON form ({"Ref": "X"}, {"Fn::Sub": "…"},
// {"Fn::GetAtt": ["X", "Attr"]}), so callers see one representation
// whichever form the template uses and can still tell a reference from a
// literal. Intrinsics are evaluated only on request: TableInput substitutes
// parameter defaults where a table needs a literal, and Resolve /
// FunctionEnvironment evaluate Ref, Fn::Sub and friends against the values a
// local run supplies (local table names, function names).
package samtemplate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Template is a parsed SAM or CloudFormation template.
type Template struct {
	// Path is the file the template was loaded from, empty for Parse.
	Path      string
	Transform any
	// Parameters maps a parameter's name to its declaration (Type,
	// Default, …).
	Parameters map[string]map[string]any
	Globals    map[string]any
	Outputs    map[string]any
	// Conditions maps a condition's name to its definition (long form).
	Conditions map[string]any
	// Rules maps a rule's name to its RuleCondition and Assertions.
	Rules map[string]any

	resources map[string]Resource
}

// Resource is one entry of the template's Resources section.
type Resource struct {
	LogicalID string
	Type      string
	// Properties are the resource's properties as plain Go values: maps,
	// slices, strings, numbers, bools, with intrinsics in long form.
	Properties map[string]any
	// Attributes holds the resource attributes other than Type and
	// Properties: DependsOn, Condition, DeletionPolicy, Metadata, ….
	Attributes map[string]any
}

// Load reads and parses the template at path.
func Load(path string) (*Template, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("samtemplate: %w", err)
	}
	t, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	t.Path = path
	return t, nil
}

// LoadRepo loads template.yaml from the repository root, found by walking up
// from the working directory to the directory holding go.mod — the package
// directory under `go test`, the root under `make local`.
func LoadRepo() (*Template, error) {
	dir, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("samtemplate: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return Load(filepath.Join(dir, "template.yaml"))
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return nil, errors.New("samtemplate: no go.mod above the working directory, so no repository root to find template.yaml in")
		}
		dir = parent
	}
}

// Parse parses a template from YAML (or JSON, which is YAML too).
func Parse(data []byte) (*Template, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("samtemplate: %w", err)
	}
	if len(doc.Content) == 0 {
		return nil, errors.New("samtemplate: empty template")
	}
	v, err := (&walker{}).toValue(doc.Content[0], 0)
	if err != nil {
		return nil, fmt.Errorf("samtemplate: %w", err)
	}
	top, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("samtemplate: the template is not a mapping")
	}
	t := &Template{
		Transform:  top["Transform"],
		Parameters: map[string]map[string]any{},
		resources:  map[string]Resource{},
	}
	t.Globals, _ = top["Globals"].(map[string]any)
	t.Outputs, _ = top["Outputs"].(map[string]any)
	t.Conditions, _ = top["Conditions"].(map[string]any)
	t.Rules, _ = top["Rules"].(map[string]any)
	if params, ok := top["Parameters"].(map[string]any); ok {
		for name, p := range params {
			decl, ok := p.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("samtemplate: parameter %s is not a mapping", name)
			}
			t.Parameters[name] = decl
		}
	}
	resources, ok := top["Resources"].(map[string]any)
	if !ok {
		return nil, errors.New("samtemplate: no Resources mapping (CloudFormation requires one)")
	}
	for id, r := range resources {
		body, ok := r.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("samtemplate: resource %s is not a mapping", id)
		}
		res := Resource{LogicalID: id, Attributes: map[string]any{}}
		if res.Type, ok = body["Type"].(string); !ok || res.Type == "" {
			return nil, fmt.Errorf("samtemplate: resource %s has no Type", id)
		}
		res.Properties, _ = body["Properties"].(map[string]any)
		if res.Properties == nil {
			res.Properties = map[string]any{}
		}
		for k, v := range body {
			if k != "Type" && k != "Properties" {
				res.Attributes[k] = v
			}
		}
		t.resources[id] = res
	}
	return t, nil
}

// Resources returns the resources of type typ (e.g. "AWS::DynamoDB::Table")
// by logical ID; an empty typ returns them all.
func (t *Template) Resources(typ string) map[string]Resource {
	out := map[string]Resource{}
	for id, r := range t.resources {
		if typ == "" || r.Type == typ {
			out[id] = r
		}
	}
	return out
}

// Resource returns the resource with the given logical ID.
func (t *Template) Resource(logicalID string) (Resource, bool) {
	r, ok := t.resources[logicalID]
	return r, ok
}

// LogicalIDs returns the logical IDs of the resources of type typ (all for
// an empty typ), sorted, for callers that must act in a stable order.
func (t *Template) LogicalIDs(typ string) []string {
	var ids []string
	for id, r := range t.resources {
		if typ == "" || r.Type == typ {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// ParameterDefault returns the Default of a parameter, if it declares one.
func (t *Template) ParameterDefault(name string) (any, bool) {
	decl, ok := t.Parameters[name]
	if !ok {
		return nil, false
	}
	v, ok := decl["Default"]
	return v, ok
}

// Intrinsic reports whether v is an intrinsic function in long form — a
// one-key map whose key is "Ref", "Condition" or starts with "Fn::" — and
// returns the function's name and argument.
func Intrinsic(v any) (fn string, arg any, ok bool) {
	m, isMap := v.(map[string]any)
	if !isMap || len(m) != 1 {
		return "", nil, false
	}
	for k, a := range m {
		if k == "Ref" || k == "Condition" || strings.HasPrefix(k, "Fn::") {
			return k, a, true
		}
	}
	return "", nil, false
}

// Limits that keep a broken or hostile file from exhausting the stack or
// memory: aliases are expanded into copies, so a few lines of nested
// aliases ("billion laughs") could otherwise grow without bound.
const (
	maxDepth = 100
	maxNodes = 1_000_000
)

// walker turns YAML nodes into plain Go values, rewriting short-form
// intrinsic tags to their long form, and counts the nodes it produced.
type walker struct{ nodes int }

func (w *walker) toValue(n *yaml.Node, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("line %d: nesting deeper than %d", n.Line, maxDepth)
	}
	if w.nodes++; w.nodes > maxNodes {
		return nil, fmt.Errorf("line %d: more than %d values (alias expansion?)", n.Line, maxNodes)
	}
	if n.Kind == yaml.AliasNode {
		return w.toValue(n.Alias, depth+1)
	}
	if fn, ok := shortFormTag(n.Tag); ok {
		plain := *n
		plain.Tag = "" // let the node decode as if untagged
		plain.Style &^= yaml.TaggedStyle
		arg, err := w.toValue(&plain, depth+1)
		if err != nil {
			return nil, err
		}
		if s, isStr := arg.(string); isStr && fn == "Fn::GetAtt" {
			// !GetAtt Resource.Attribute is the scalar spelling of
			// [Resource, Attribute]; attributes may themselves contain dots.
			res, attr, _ := strings.Cut(s, ".")
			arg = []any{res, attr}
		}
		return map[string]any{fn: arg}, nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, err := w.toValue(n.Content[i], depth+1)
			if err != nil {
				return nil, err
			}
			v, err := w.toValue(n.Content[i+1], depth+1)
			if err != nil {
				return nil, err
			}
			m[fmt.Sprint(k)] = v
		}
		return m, nil
	case yaml.SequenceNode:
		s := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := w.toValue(c, depth+1)
			if err != nil {
				return nil, err
			}
			s = append(s, v)
		}
		return s, nil
	case yaml.ScalarNode:
		if n.Tag == "!!timestamp" {
			// CloudFormation has no timestamps: an unquoted
			// AWSTemplateFormatVersion: 2010-09-09 is the string.
			return n.Value, nil
		}
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}
		return v, nil
	}
	return nil, fmt.Errorf("line %d: unexpected YAML node kind %d", n.Line, n.Kind)
}

// shortFormTag maps a CloudFormation short-form tag to its long-form key.
// Tags of the YAML core schema (!!str, !!int, …) are not intrinsics.
func shortFormTag(tag string) (string, bool) {
	if !strings.HasPrefix(tag, "!") || strings.HasPrefix(tag, "!!") || tag == "!" {
		return "", false
	}
	name := tag[1:]
	switch name {
	case "Ref", "Condition":
		return name, true
	}
	return "Fn::" + name, true
}
