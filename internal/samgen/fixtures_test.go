package samgen

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/catalog"
	"github.com/mcpfn/mcpfn/internal/samtemplate"
	"github.com/mcpfn/mcpfn/taskstore"
)

// The tools of these tests: a small notes project, declared as a user
// declares tools (adapter.Declare), so the catalog entries are real
// declarations and not hand-written data.

type notes struct{}

type noteIn struct {
	Owner string `json:"owner" jsonschema:"whose note"`
	Text  string `json:"text,omitempty" jsonschema:"the note"`
}

type noteOut struct {
	ID string `json:"id" jsonschema:"the note's id"`
}

func handle[In, Out any](*notes, context.Context, *adapter.Call, In) (Out, error) {
	var zero Out
	return zero, nil
}

var (
	noteAdd = adapter.Declare(adapter.ToolDef[noteIn, noteOut]{
		Name: "note_add", Title: "Add a note",
		Tables: []adapter.TableAccess{{Table: "NotesTable", Env: "NOTES_TABLE", Actions: []string{"PutItem", "GetItem"}}},
	}, handle[noteIn, noteOut])
	noteList = adapter.Declare(adapter.ToolDef[noteIn, noteOut]{
		Name: "note_list", Description: "Lists an owner's notes. Newest first.", ReadOnly: true,
		Tables:  []adapter.TableAccess{{Table: "NotesTable", Env: "NOTES_TABLE", Index: "byOwner", Actions: []string{"Query"}}},
		Timeout: 30 * time.Second, MemoryMB: 512,
	}, handle[noteIn, noteOut])
	noteDelete = adapter.Declare(adapter.ToolDef[noteIn, noteOut]{
		Name: "note_delete", Destructive: true, Scopes: []string{"notes:write"},
		Tables: []adapter.TableAccess{
			{Table: "NotesTable", Env: "NOTES_TABLE", Actions: []string{"DeleteItem"}},
			{Table: "NotesTable", Env: "NOTES_TABLE", Index: "byOwner", Actions: []string{"Query"}},
			{Table: "TagsTable", Env: "TAGS_TABLE", Actions: []string{"BatchWriteItem"}},
		},
	}, handle[noteIn, noteOut])
	noteAttach = adapter.Declare(adapter.ToolDef[noteIn, noteOut]{
		Name: "note_attach", Description: "Attaches a file to a note.",
		Tables: []adapter.TableAccess{{Table: "NotesTable", Env: "NOTES_TABLE", Actions: []string{"UpdateItem"}}},
		Buckets: []adapter.BucketAccess{
			{Bucket: "AttachmentsBucket", Env: "ATTACHMENTS_BUCKET", Prefix: "notes/", Actions: []string{"PutObject", "GetObject"}},
			{Bucket: "AttachmentsBucket", Env: "ATTACHMENTS_BUCKET", Actions: []string{"GetObjectVersion"}},
		},
	}, handle[noteIn, noteOut])
	echo = adapter.Declare(adapter.ToolDef[noteIn, noteOut]{Name: "echo", Description: "Answers with its input."}, handle[noteIn, noteOut])
)

// entryOf is a tool's catalog entry as `mcpfn template` writes it.
func entryOf(d *adapter.Declared[*notes]) catalog.Entry {
	decl := d.Tool().Declaration()
	return catalog.Entry{Function: catalog.FunctionID(decl.Name), Package: "./functions/" + decl.Name, Tool: decl}
}

// catalogOf is a catalog of tools, in name order as project.CatalogOf
// writes it.
func catalogOf(tools ...*adapter.Declared[*notes]) *catalog.File {
	f := &catalog.File{Version: catalog.Version}
	for _, d := range tools {
		f.Tools = append(f.Tools, entryOf(d))
	}
	slices.SortFunc(f.Tools, func(a, b catalog.Entry) int { return strings.Compare(a.Tool.Name, b.Tool.Name) })
	return f
}

// userTemplate is a project's own template before its first `mcpfn
// template`: its tables, a parameter, an output and comments.
const userTemplate = `AWSTemplateFormatVersion: "2010-09-09"
Transform: AWS::Serverless-2016-10-31
Description: notes — the project's own template

# A comment of the project's, before every section.

Parameters:
  NotesRetentionDays:
    Type: Number
    Default: 30

Resources:
  # The notes, by id; byOwner lists an owner's notes.
  NotesTable:
    Type: AWS::DynamoDB::Table
    Properties:
      BillingMode: PAY_PER_REQUEST
      AttributeDefinitions:
        - AttributeName: id
          AttributeType: S
        - AttributeName: owner
          AttributeType: S
      KeySchema:
        - AttributeName: id
          KeyType: HASH
      GlobalSecondaryIndexes:
        - IndexName: byOwner
          KeySchema:
            - AttributeName: owner
              KeyType: HASH
          Projection:
            ProjectionType: ALL
  TagsTable:
    Type: AWS::Serverless::SimpleTable
  AttachmentsBucket:
    Type: AWS::S3::Bucket

Outputs:
  NotesTableName:
    Value: !Ref NotesTable
# The project's last line.
`

// generate is Generate that fails the test on an error.
func generate(t *testing.T, src string, cat *catalog.File) string {
	t.Helper()
	out, err := Generate([]byte(src), cat, "a test project")
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	return string(out)
}

// generateErr is Generate's error, failing the test when there is none.
func generateErr(t *testing.T, src string, cat *catalog.File) string {
	t.Helper()
	out, err := Generate([]byte(src), cat, "a test project")
	if err == nil {
		t.Fatalf("Generate succeeded, want an error; it wrote\n%s", out)
	}
	return err.Error()
}

// mustParse parses a template with the regions found, failing the test.
func mustParse(t *testing.T, src string) *doc {
	t.Helper()
	d, err := parse(src)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return d
}

// regionBodies returns each region's lines, markers included, by name.
func regionBodies(t *testing.T, src string) map[string][]string {
	t.Helper()
	d := mustParse(t, src)
	out := map[string][]string{}
	for _, r := range d.regions {
		out[r.name] = d.lines[r.begin : r.end+1]
	}
	return out
}

// outsideLines returns the lines of src in no region: the project's own.
func outsideLines(t *testing.T, src string) []string {
	t.Helper()
	d := mustParse(t, src)
	in := map[int]bool{}
	for _, r := range d.regions {
		for i := r.begin; i <= r.end; i++ {
			in[i] = true
		}
	}
	var out []string
	for i, l := range d.lines {
		if !in[i] {
			out = append(out, l)
		}
	}
	return out
}

// withoutBlankBefore is outsideLines of src without the blank line that
// separates region name from what precedes it (it comes and goes with the
// region).
func withoutBlankBefore(t *testing.T, src, name string) []string {
	t.Helper()
	d := mustParse(t, src)
	r := d.region(name)
	if r == nil {
		t.Fatalf("no region %q", name)
	}
	if r.begin == 0 || d.lines[r.begin-1] != "" {
		t.Fatalf("region %q has no blank line before it", name)
	}
	lines := slices.Delete(slices.Clone(d.lines), r.begin-1, r.begin)
	return outsideLines(t, strings.Join(lines, "\n")+"\n")
}

// parsed parses a generated template with internal/samtemplate.
func parsed(t *testing.T, src string) *samtemplate.Template {
	t.Helper()
	tpl, err := samtemplate.Parse([]byte(src))
	if err != nil {
		t.Fatalf("the generated template does not parse: %v\n%s", err, src)
	}
	return tpl
}

// grantsOf returns a function's inline policy statements as "action on
// resource" (resources by logical id, an index as "T/index/i", a condition
// on dynamodb:LeadingKeys as " where key like p").
func grantsOf(t *testing.T, r samtemplate.Resource) []string {
	t.Helper()
	var out []string
	for _, p := range asList(r.Properties["Policies"]) {
		for _, s := range asList(dig(p, "Statement")) {
			if dig(s, "Effect") != "Allow" {
				t.Errorf("%s: statement %v is not an Allow", r.LogicalID, s)
			}
			where := ""
			if c := dig(s, "Condition"); c != nil {
				keys := asList(dig(c, "ForAllValues:StringLike", "dynamodb:LeadingKeys"))
				attrs := asList(dig(c, "ForAllValues:StringEquals", "dynamodb:Attributes"))
				if m, _ := c.(map[string]any); len(keys) == 0 || len(m) != 1+min(len(attrs), 1) {
					t.Errorf("%s: condition %v", r.LogicalID, c)
				}
				where = fmt.Sprint(" where key like ", keys)
				if len(attrs) > 0 {
					where += fmt.Sprint(" with attributes ", attrs)
				}
			}
			for _, a := range asList(dig(s, "Action")) {
				for _, res := range asList(dig(s, "Resource")) {
					out = append(out, fmt.Sprintf("%v on %s%s", a, resourceName(t, res), where))
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// resourceName names what an IAM Resource entry points at: !GetAtt X.Arn
// → X, !Sub "${X.Arn}/index/i" → X/index/i, !Sub "${X.Arn}/p*" → X/p*,
// !Ref X → X.
func resourceName(t *testing.T, v any) string {
	t.Helper()
	fn, arg, _ := samtemplate.Intrinsic(v)
	switch fn {
	case "Fn::GetAtt":
		if l := asList(arg); len(l) == 2 && l[1] == "Arn" {
			return fmt.Sprint(l[0])
		}
		if s, ok := arg.(string); ok && strings.HasSuffix(s, ".Arn") {
			return strings.TrimSuffix(s, ".Arn")
		}
	case "Fn::Sub":
		if s, ok := arg.(string); ok && strings.HasPrefix(s, "${") {
			table, index, ok := strings.Cut(strings.TrimPrefix(s, "${"), ".Arn}/index/")
			if ok {
				return table + "/index/" + index
			}
			if bucket, keys, ok := strings.Cut(strings.TrimPrefix(s, "${"), ".Arn}/"); ok && strings.HasSuffix(keys, "*") {
				return bucket + "/" + keys
			}
		}
	case "Ref":
		return fmt.Sprint(arg)
	}
	t.Errorf("IAM resource %v names no resource of the stack", v)
	return fmt.Sprint(v)
}

// wantGrants is what a tool's role must grant, derived from its
// declaration alone: its declared table and bucket actions, its own audit
// rows, its cancel markers, its task runs, its own call key and its own
// payloads.
func wantGrants(d adapter.Declaration) []string {
	prefix := catalog.Prefix(d.Name)
	want := []string{
		"dynamodb:PutItem on AuditTable where key like [" + d.Name + "#*]",
		"dynamodb:UpdateItem on AuditTable where key like [" + d.Name + "#*]",
		"secretsmanager:GetSecretValue on " + prefix + "CallKey",
		"s3:GetObject on PayloadsBucket/" + d.Name + "/results/*",
		"s3:GetObjectVersion on PayloadsBucket/" + d.Name + "/results/*",
		"s3:PutObject on PayloadsBucket/" + d.Name + "/results/*",
		"s3:GetObject on PayloadsBucket/" + d.Name + "/args/*",
		"s3:GetObjectVersion on PayloadsBucket/" + d.Name + "/args/*",
	}
	for _, b := range d.Buckets {
		for _, a := range b.Actions {
			want = append(want, "s3:"+a+" on "+b.Bucket+"/"+b.Prefix+"*")
		}
	}
	// Cancel markers it reads; its own tasks' runs, when it runs as a
	// task (decision 0033).
	if d.TaskSupport == adapter.TaskOptional || d.TaskSupport == adapter.TaskRequired {
		attrs := make([]any, len(taskstore.RunAttributes))
		for i, a := range taskstore.RunAttributes {
			attrs[i] = a
		}
		want = append(want, "dynamodb:GetItem on TasksTable where key like [cancel#* "+d.Name+".*]",
			fmt.Sprint("dynamodb:UpdateItem on TasksTable where key like [", d.Name, ".*] with attributes ", attrs))
	} else {
		want = append(want, "dynamodb:GetItem on TasksTable where key like [cancel#*]")
	}
	for _, ta := range d.Tables {
		on := ta.Table
		if ta.Index != "" {
			on += "/index/" + ta.Index
		}
		for _, a := range ta.Actions {
			want = append(want, "dynamodb:"+a+" on "+on)
		}
	}
	slices.Sort(want)
	return want
}

func dig(v any, path ...string) any {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

func asList(v any) []any {
	switch x := v.(type) {
	case nil:
		return nil
	case []any:
		return x
	}
	return []any{v}
}

func envOf(r samtemplate.Resource) map[string]any {
	vars, _ := dig(r.Properties, "Environment", "Variables").(map[string]any)
	return vars
}

func sortedNames[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
