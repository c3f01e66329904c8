package gentemplate

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/agentcore"
)

// Tool is what the template needs of one catalog tool: its name and its
// AgentCore definition (the schemas its function validates with).
type Tool struct {
	Name       string
	Definition agentcore.ToolDefinition
}

// Tools describes catalog's tools, in catalog order.
func Tools(catalog []*adapter.Tool) ([]Tool, error) {
	out := make([]Tool, 0, len(catalog))
	for _, t := range catalog {
		def, err := agentcore.Definition(t)
		if err != nil {
			return nil, fmt.Errorf("tool %s: %w", t.Name(), err)
		}
		out = append(out, Tool{Name: t.Name(), Definition: def})
	}
	return out, nil
}

// Prefix is the tool's name in PascalCase, the start of every logical id
// generated for it: broadcast_create → BroadcastCreate.
func Prefix(tool string) string {
	var b strings.Builder
	for part := range strings.SplitSeq(tool, "_") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

// FunctionID is the logical id of the tool's hand-written function.
func FunctionID(tool string) string { return Prefix(tool) + "Function" }

// Generate returns template src with every generated block rewritten for
// tools. Each tool's function resource must already be in src: it is the
// one piece a developer writes (with the table grants its handler needs).
func Generate(src []byte, tools []Tool) ([]byte, error) {
	var missing []string
	for _, t := range tools {
		id := FunctionID(t.Name)
		if !regexp.MustCompile(`(?m)^  ` + id + `:\s*$`).Match(src) {
			missing = append(missing, fmt.Sprintf("tool %s: template.yaml has no %s resource; write the tool's AWS::Serverless::Function under Resources (docs/guide/write-a-tool.md, step 3)", t.Name, id))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(missing, "\n"))
	}
	out, err := splice(string(src), func(name string) ([]string, error) {
		render, ok := blocks[name]
		if !ok {
			return nil, fmt.Errorf("unknown generated block %q", name)
		}
		return render(tools), nil
	})
	return []byte(out), err
}
