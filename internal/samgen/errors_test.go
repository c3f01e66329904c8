package samgen

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/catalog"
)

// checkError runs Generate expecting an error that says every want.
func checkError(t *testing.T, src string, cat *catalog.File, want ...string) {
	t.Helper()
	msg := generateErr(t, src, cat)
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q does not say %q", msg, w)
		}
	}
}

// TestAProjectNameTakenByMcpfnIsAClearError: a resource, output, parameter
// or condition of the project's named like one mcpfn generates — for the
// skeleton or for a tool, already there or added by this run — stops
// Generate with its name and line, instead of a template with the name
// twice.
func TestAProjectNameTakenByMcpfnIsAClearError(t *testing.T) {
	cat := catalogOf(noteAdd, noteList)
	src := generate(t, userTemplate, cat)
	for name, tc := range map[string]struct {
		after, insert string
		cat           *catalog.File
		want          []string
	}{
		"a tool's function": {"Resources:\n", "  NoteAddFunction:\n    Type: AWS::SNS::Topic\n", cat,
			[]string{"Resources NoteAddFunction", `region "tool note_add"`, "rename or remove yours"}},
		"a resource of a tool being added": {"  # <<< mcpfn tool note_list\n", "  EchoCallKey:\n    Type: AWS::SNS::Topic\n", catalogOf(noteAdd, noteList, echo),
			[]string{"Resources EchoCallKey", `region "tool echo"`}},
		"a skeleton resource": {"  # <<< mcpfn tool note_list\n", "  AuditTable:\n    Type: AWS::DynamoDB::Table\n", cat,
			[]string{"Resources AuditTable", `region "resources"`}},
		"an output": {"Outputs:\n", "  GatewayFunctionArn:\n    Value: x\n", cat,
			[]string{"Outputs GatewayFunctionArn", `region "outputs"`}},
		"a tool's output": {"Outputs:\n", "  NoteListFunctionArn:\n    Value: x\n", cat,
			[]string{"Outputs NoteListFunctionArn", `region "outputs"`}},
		"a parameter": {"  NotesRetentionDays:\n", "  AuthMode:\n    Type: String\n    Default: x\n", cat,
			[]string{"Parameters AuthMode", `region "parameters"`}},
		"a condition": {"Conditions:\n", "  UseIamAuth: !Equals [a, a]\n", cat,
			[]string{"Conditions UseIamAuth", `region "conditions"`}},
	} {
		t.Run(name, func(t *testing.T) {
			if !strings.Contains(src, tc.after) {
				t.Fatalf("no %q in the template", tc.after)
			}
			edited := strings.Replace(src, tc.after, tc.after+tc.insert, 1)
			line := strings.Count(edited[:strings.Index(edited, tc.after)+len(tc.after)], "\n") + 1
			checkError(t, edited, tc.cat, append(tc.want, "line "+strconv.Itoa(line)+":")...)
		})
	}
}

// TestToolsWhoseResourcesCollideAreAClearError: a tool whose generated
// names are the skeleton's (a tool named agent_core_interceptor would
// define AgentCoreInterceptorFunction twice; "gateway" itself is a name
// adapter.Define refuses), or two tools with one PascalCase prefix, stop
// Generate with both regions named.
func TestToolsWhoseResourcesCollideAreAClearError(t *testing.T) {
	interceptor := adapter.Declare(adapter.ToolDef[noteIn, noteOut]{Name: "agent_core_interceptor"}, handle[noteIn, noteOut])
	checkError(t, userTemplate, catalogOf(interceptor), "AgentCoreInterceptorFunction", `"tool agent_core_interceptor"`, `"resources"`)

	camel := adapter.Declare(adapter.ToolDef[noteIn, noteOut]{Name: "noteAdd"}, handle[noteIn, noteOut])
	checkError(t, userTemplate, catalogOf(noteAdd, camel), "NoteAddFunction", `"tool note_add"`, `"tool noteAdd"`)
}

// TestATableTheTemplateLacksIsAClearError: a tool that names a table the
// project's template does not define (or defines as something else, or
// that only mcpfn's regions define), or an index its table lacks, stops
// Generate with the tool, the table and what to add.
func TestATableTheTemplateLacksIsAClearError(t *testing.T) {
	decl := func(name string, ta adapter.TableAccess) *adapter.Declared[*notes] {
		return adapter.Declare(adapter.ToolDef[noteIn, noteOut]{Name: name, Tables: []adapter.TableAccess{ta}}, handle[noteIn, noteOut])
	}
	for name, tc := range map[string]struct {
		src  string
		tool *adapter.Declared[*notes]
		want []string
	}{
		"no such table": {userTemplate, decl("note_tag", adapter.TableAccess{Table: "LabelsTable", Env: "LABELS", Actions: []string{"GetItem"}}),
			[]string{"tool note_tag", "LabelsTable", "does not define", "AWS::DynamoDB::Table named LabelsTable"}},
		"a new template": {"", noteAdd,
			[]string{"tool note_add", "NotesTable", "does not define"}},
		"not a table": {strings.Replace(userTemplate, "  TagsTable:\n    Type: AWS::Serverless::SimpleTable\n", "  TagsTable:\n    Type: AWS::SQS::Queue\n", 1),
			decl("note_tag", adapter.TableAccess{Table: "TagsTable", Env: "TAGS", Actions: []string{"PutItem"}}),
			[]string{"tool note_tag", "TagsTable", "AWS::SQS::Queue", "not a DynamoDB table"}},
		"mcpfn's own table": {userTemplate, decl("note_audit", adapter.TableAccess{Table: "AuditTable", Env: "AUDIT", Actions: []string{"Scan"}}),
			[]string{"tool note_audit", "AuditTable"}},
		"no such index": {userTemplate, decl("note_find", adapter.TableAccess{Table: "NotesTable", Env: "NOTES", Index: "byText", Actions: []string{"Query"}}),
			[]string{"tool note_find", "index byText", "NotesTable", "does not define"}},
		"an index of a simple table": {userTemplate, decl("note_find", adapter.TableAccess{Table: "TagsTable", Env: "TAGS", Index: "byNote", Actions: []string{"Query"}}),
			[]string{"tool note_find", "index byNote", "TagsTable"}},
	} {
		t.Run(name, func(t *testing.T) {
			checkError(t, tc.src, catalogOf(tc.tool), tc.want...)
		})
	}
}

// TestABucketTheTemplateLacksIsAClearError: a tool that names a bucket the
// project's template does not define, defines as something else, or that
// is mcpfn's own payloads bucket stops Generate with the tool, the bucket
// and what to do.
func TestABucketTheTemplateLacksIsAClearError(t *testing.T) {
	decl := func(name string, b adapter.BucketAccess) *adapter.Declared[*notes] {
		return adapter.Declare(adapter.ToolDef[noteIn, noteOut]{Name: name, Buckets: []adapter.BucketAccess{b}}, handle[noteIn, noteOut])
	}
	for name, tc := range map[string]struct {
		src  string
		tool *adapter.Declared[*notes]
		want []string
	}{
		"no such bucket": {userTemplate, decl("note_file", adapter.BucketAccess{Bucket: "FilesBucket", Env: "FILES", Actions: []string{"GetObject"}}),
			[]string{"tool note_file", "FilesBucket", "does not define", "AWS::S3::Bucket named FilesBucket"}},
		"a new template": {"", noteAttach, []string{"tool note_attach", "AttachmentsBucket", "does not define"}},
		"not a bucket": {userTemplate, decl("note_file", adapter.BucketAccess{Bucket: "NotesTable", Env: "FILES", Actions: []string{"GetObject"}}),
			[]string{"tool note_file", "NotesTable", "AWS::DynamoDB::Table", "not an S3 bucket"}},
		"mcpfn's payloads bucket": {userTemplate, decl("note_file", adapter.BucketAccess{Bucket: "PayloadsBucket", Env: "FILES", Actions: []string{"GetObject"}}),
			[]string{"tool note_file", "PayloadsBucket", "its own prefixes"}},
		"a skeleton resource": {userTemplate, decl("note_file", adapter.BucketAccess{Bucket: "TasksTable", Env: "FILES", Actions: []string{"GetObject"}}),
			[]string{"tool note_file", "TasksTable", "does not define"}},
	} {
		t.Run(name, func(t *testing.T) {
			checkError(t, tc.src, catalogOf(tc.tool), tc.want...)
		})
	}
}

// TestATemplateMcpfnCannotWriteIntoIsAClearError: no tools, no SAM
// transform, a section in flow style, a region in the wrong section or
// twice.
func TestATemplateMcpfnCannotWriteIntoIsAClearError(t *testing.T) {
	cat := catalogOf(noteAdd)
	src := generate(t, userTemplate, cat)
	region := func(name string) string {
		d := mustParse(t, src)
		r := d.region(name)
		return strings.Join(d.lines[r.begin:r.end+1], "\n") + "\n"
	}
	for name, tc := range map[string]struct {
		src  string
		cat  *catalog.File
		want []string
	}{
		"no tools":     {userTemplate, &catalog.File{Version: catalog.Version}, []string{"no tools"}},
		"no transform": {strings.Replace(userTemplate, "Transform: AWS::Serverless-2016-10-31\n", "", 1), cat, []string{"Transform: AWS::Serverless-2016-10-31"}},
		"flow outputs": {strings.Replace(userTemplate, "Outputs:\n  NotesTableName:\n    Value: !Ref NotesTable\n", "Outputs: {}\n", 1), cat, []string{"Outputs must be a block mapping"}},
		"a tool region in Outputs": {strings.Replace(strings.Replace(src, region("tool note_add"), "", 1), "Outputs:\n", "Outputs:\n"+region("tool note_add"), 1), cat,
			[]string{`region "tool note_add" must be inside Resources`}},
		"a region twice": {strings.Replace(src, "Outputs:\n", region("resources")+"Outputs:\n", 1), cat, []string{`region "resources" appears twice`}},
	} {
		t.Run(name, func(t *testing.T) {
			checkError(t, tc.src, tc.cat, tc.want...)
		})
	}
}

// TestALongDescriptionFitsLambda: a function's Description is cut to
// Lambda's 256 on a character boundary (an accented letter is never split
// into invalid UTF-8, which the template would carry as U+FFFD).
func TestALongDescriptionFitsLambda(t *testing.T) {
	long := adapter.Declare(adapter.ToolDef[noteIn, noteOut]{
		Name: "note_long", Title: "a" + strings.Repeat("é", 300),
	}, handle[noteIn, noteOut])
	v, err := viewOf(entryOf(long))
	if err != nil {
		t.Fatal(err)
	}
	if !utf8.ValidString(v.Description) || len(v.Description) > 256 || !strings.HasSuffix(v.Description, "...") {
		t.Errorf("Description %q (%d bytes, valid UTF-8 %v)", v.Description, len(v.Description), utf8.ValidString(v.Description))
	}
	src := generate(t, userTemplate, catalogOf(long))
	fn, _ := parsed(t, src).Resource("NoteLongFunction")
	if d, _ := fn.Properties["Description"].(string); d != v.Description {
		t.Errorf("the template's Description %q, want %q", d, v.Description)
	}
}
