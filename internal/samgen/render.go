package samgen

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"text/template"
	"time"
	"unicode/utf8"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/agentcore"
	"github.com/mcpfn/mcpfn/catalog"
	"github.com/mcpfn/mcpfn/taskstore"
)

//go:embed regions
var regionFiles embed.FS

// EnvRef is an environment variable set to a !Ref of a template resource or
// parameter.
type EnvRef struct{ Name, Ref string }

// CommonEnvironment is what every function of the skeleton and every tool
// function gets: where the audit goes and how long it stays, the key grace,
// the tasks table, the payloads bucket. The local stack gives its fixture
// functions the same.
var CommonEnvironment = []EnvRef{
	{"MCPFN_AUDIT_TABLE", "AuditTable"},
	{"MCPFN_AUDIT_RETENTION_DAYS", "AuditRetentionDays"},
	{"MCPFN_AUDIT_ENTITY_DIMENSION", "AuditEntityDimension"},
	{"MCPFN_CALL_KEY_GRACE", "CallKeyGrace"},
	{"MCPFN_TASKS_TABLE", "TasksTable"},
	{EnvPayloadsBucket, PayloadsBucket},
}

// The skeleton's payloads bucket (claim checks: results and arguments too
// large to pass inline) and the variable its name arrives in. Each tool
// reads and writes only under its own prefix, "<tool>/".
const (
	PayloadsBucket    = "PayloadsBucket"
	EnvPayloadsBucket = "MCPFN_PAYLOADS_BUCKET"
)

var templates = template.Must(template.New("").Funcs(template.FuncMap{
	"commonEnv": func() []EnvRef { return CommonEnvironment },
	"toolMap":   toolMap,
	"quote":     quote,
	// runAttributes: what a task run writes on its own tasks (the
	// dynamodb:Attributes of its role's UpdateItem).
	"runAttributes": func() string { return "[" + strings.Join(taskstore.RunAttributes, ", ") + "]" },
	"indent": func(n int, lines []string) string {
		pad := strings.Repeat(" ", n)
		out := make([]string, len(lines))
		for i, l := range lines {
			out[i] = pad + l
		}
		return strings.Join(out, "\n")
	},
}).ParseFS(regionFiles, "regions/*.yaml", "regions/*.tmpl"))

// toolView is what a tool's region is rendered from.
type toolView struct {
	Name, Prefix, Package, Description, TargetName string
	TimeoutSeconds, MemoryMB                       int
	// Tasks: the tool runs as a task (TaskSupport optional or required);
	// its role may then write its own tasks' runs.
	Tasks bool
	// LongRunning: its Timeout is above the default; its concurrency is
	// reserved when the LongRunningConcurrency parameter says so.
	LongRunning bool
	Env         []EnvRef
	Grants      []grant
	Schema      []string // the AgentCore target's InlinePayload item
}

// grant is one IAM statement of a tool's role, rendered.
type grant struct{ Actions, Resource string }

func viewOf(e catalog.Entry) (toolView, error) {
	d := e.Tool
	v := toolView{
		Name: d.Name, Prefix: catalog.Prefix(d.Name), Package: e.Package,
		TargetName: agentcore.TargetName(d.Name), TimeoutSeconds: d.TimeoutSeconds, MemoryMB: d.MemoryMB,
		Tasks:       d.TaskSupport == adapter.TaskOptional || d.TaskSupport == adapter.TaskRequired,
		LongRunning: time.Duration(d.TimeoutSeconds)*time.Second > adapter.DefaultTimeout,
	}
	summary := d.Title
	if summary == "" {
		summary, _, _ = strings.Cut(d.Description, ". ")
		summary = strings.TrimSuffix(summary, ".")
	}
	v.Description = "MCP tool " + d.Name
	if summary != "" {
		v.Description += " — " + summary
	}
	if len(v.Description) > 256 { // Lambda's limit
		cut := 253
		for !utf8.RuneStart(v.Description[cut]) { // never half a character
			cut--
		}
		v.Description = v.Description[:cut] + "..."
	}
	seen := map[string]bool{}
	for _, t := range d.Tables {
		if !seen[t.Env] {
			seen[t.Env] = true
			v.Env = append(v.Env, EnvRef{t.Env, t.Table})
		}
		actions := make([]string, len(t.Actions))
		for i, a := range t.Actions {
			actions[i] = "dynamodb:" + a
		}
		g := grant{Actions: actions[0], Resource: "!GetAtt " + t.Table + ".Arn"}
		if len(actions) > 1 {
			g.Actions = "[" + strings.Join(actions, ", ") + "]"
		}
		if t.Index != "" {
			g.Resource = quote("${" + t.Table + ".Arn}/index/" + t.Index)
			g.Resource = "!Sub " + g.Resource
		}
		v.Grants = append(v.Grants, g)
	}
	for _, b := range d.Buckets {
		if !seen[b.Env] {
			seen[b.Env] = true
			v.Env = append(v.Env, EnvRef{b.Env, b.Bucket})
		}
		actions := make([]string, len(b.Actions))
		for i, a := range b.Actions {
			actions[i] = "s3:" + a
		}
		g := grant{Actions: actions[0], Resource: "!Sub " + quote("${"+b.Bucket+".Arn}/"+b.Prefix+"*")}
		if len(actions) > 1 {
			g.Actions = "[" + strings.Join(actions, ", ") + "]"
		}
		v.Grants = append(v.Grants, g)
	}
	tool, err := adapter.ToolFromDeclaration(d)
	if err != nil {
		return v, err
	}
	def, err := agentcore.Definition(tool)
	if err != nil {
		return v, fmt.Errorf("tool %s: %w", d.Name, err)
	}
	v.Schema = definition(def)
	return v, nil
}

// toolMap renders "tool=${<Prefix><suffix>},…" for the signers' maps.
func toolMap(tools []toolView, suffix string) string {
	parts := make([]string, len(tools))
	for i, t := range tools {
		parts[i] = fmt.Sprintf("%s=${%s%s}", t.Name, t.Prefix, suffix)
	}
	return strings.Join(parts, ",")
}

// render executes one region's template and returns its lines.
func render(name string, data any) ([]string, error) {
	var b bytes.Buffer
	if err := templates.ExecuteTemplate(&b, name, data); err != nil {
		return nil, fmt.Errorf("samgen: rendering %s: %w", name, err)
	}
	return strings.Split(strings.TrimRight(b.String(), "\n"), "\n"), nil
}

// definition renders d as one item of a target's InlinePayload, with
// CloudFormation's PascalCase keys.
func definition(d agentcore.ToolDefinition) []string {
	out := []string{"- Name: " + d.Name, "  Description: " + quote(d.Description)}
	out = append(out, "  InputSchema:")
	out = append(out, indentLines("    ", schema(d.InputSchema))...)
	if d.OutputSchema != nil {
		out = append(out, "  OutputSchema:")
		out = append(out, indentLines("    ", schema(d.OutputSchema))...)
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
		for _, n := range sortedKeys(s.Properties) {
			out = append(out, "  "+n+":")
			out = append(out, indentLines("    ", schema(s.Properties[n]))...)
		}
	}
	if s.Items != nil {
		out = append(out, "Items:")
		out = append(out, indentLines("  ", schema(s.Items))...)
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

func indentLines(prefix string, lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = prefix + l
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
