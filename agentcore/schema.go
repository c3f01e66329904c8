package agentcore

import (
	"fmt"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/mcpfn/mcpfn/adapter"
)

// ToolDefinition is AgentCore Gateway's ToolDefinition: the inline tool
// schema of a Lambda target (camelCase in the API and these JSON tags;
// PascalCase in CloudFormation).
type ToolDefinition struct {
	Name         string            `json:"name"`
	Description  string            `json:"description"`
	InputSchema  *SchemaDefinition `json:"inputSchema"`
	OutputSchema *SchemaDefinition `json:"outputSchema,omitempty"`
}

// SchemaDefinition is AgentCore Gateway's SchemaDefinition, a subset of JSON
// Schema.
type SchemaDefinition struct {
	Type        string                       `json:"type"`
	Description string                       `json:"description,omitempty"`
	Properties  map[string]*SchemaDefinition `json:"properties,omitempty"`
	Required    []string                     `json:"required,omitempty"`
	Items       *SchemaDefinition            `json:"items,omitempty"`
}

// Definition is t's AgentCore tool definition, generated from the schemas
// the tool's function validates with. AgentCore's format keeps type,
// description, properties, required and items; the constraints it drops
// (lengths, patterns, bounds) are still enforced by the function itself.
func Definition(t *adapter.Tool) (ToolDefinition, error) {
	def := ToolDefinition{Name: t.Name(), Description: t.Description()}
	var err error
	if def.InputSchema, err = convert(t.InputSchema()); err != nil {
		return def, fmt.Errorf("%s input: %w", def.Name, err)
	}
	if def.OutputSchema, err = convert(t.OutputSchema()); err != nil {
		return def, fmt.Errorf("%s output: %w", def.Name, err)
	}
	return def, nil
}

// convert maps a JSON Schema onto AgentCore's subset. A nullable type
// (["null", "string"], as the adapter infers for a pointer written as null)
// keeps its non-null member: AgentCore has one type per schema.
func convert(s *jsonschema.Schema) (*SchemaDefinition, error) {
	if s == nil {
		return nil, nil
	}
	typ := s.Type
	if typ == "" {
		types := slices.DeleteFunc(slices.Clone(s.Types), func(t string) bool { return t == "null" })
		if len(types) != 1 {
			return nil, fmt.Errorf("cannot express types %v in AgentCore's schema", s.Types)
		}
		typ = types[0]
	}
	d := &SchemaDefinition{Type: typ, Description: s.Description, Required: slices.Clone(s.Required)}
	for name, p := range s.Properties {
		c, err := convert(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if d.Properties == nil {
			d.Properties = make(map[string]*SchemaDefinition)
		}
		d.Properties[name] = c
	}
	if s.Items != nil {
		var err error
		if d.Items, err = convert(s.Items); err != nil {
			return nil, fmt.Errorf("items: %w", err)
		}
	}
	return d, nil
}
