package gentemplate

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/mcpfn/mcpfn/agentcore"
)

// definition renders d as one item of a target's InlinePayload, with
// CloudFormation's PascalCase keys.
func definition(d agentcore.ToolDefinition) []string {
	out := []string{"- Name: " + d.Name, "  Description: " + quote(d.Description)}
	out = append(out, "  InputSchema:")
	out = append(out, indent("    ", schema(d.InputSchema))...)
	if d.OutputSchema != nil {
		out = append(out, "  OutputSchema:")
		out = append(out, indent("    ", schema(d.OutputSchema))...)
	}
	return out
}

// schema renders s as a YAML mapping; properties sorted by name.
func schema(s *agentcore.SchemaDefinition) []string {
	out := []string{"Type: " + s.Type}
	if s.Description != "" {
		out = append(out, "Description: "+quote(s.Description))
	}
	if len(s.Properties) > 0 {
		out = append(out, "Properties:")
		names := make([]string, 0, len(s.Properties))
		for n := range s.Properties {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			out = append(out, "  "+n+":")
			out = append(out, indent("    ", schema(s.Properties[n]))...)
		}
	}
	if s.Items != nil {
		out = append(out, "Items:")
		out = append(out, indent("  ", schema(s.Items))...)
	}
	if len(s.Required) > 0 {
		out = append(out, "Required: ["+strings.Join(s.Required, ", ")+"]")
	}
	return out
}

// quote is s as a double-quoted YAML scalar (JSON's escapes are YAML's).
func quote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// indent prefixes every line with prefix.
func indent(prefix string, lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = prefix + l
	}
	return out
}
