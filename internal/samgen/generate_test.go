package samgen

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/catalog"
	"github.com/mcpfn/mcpfn/internal/linediff"
	"github.com/mcpfn/mcpfn/internal/samtemplate"
)

// The shared skeleton: what every project's template holds whatever its
// tools, by section.
var (
	skeletonResources = []string{
		"AgentCoreGateway", "AgentCoreGatewayRole", "AgentCoreInterceptorAgentCoreGatewayPermission",
		"AgentCoreInterceptorFunction", "AuditTable", "GatewayFunction", "GatewaySessionKey", "GatewaySessionKeyPolicy",
		"McpCallerPolicy", "PayloadsBucket", "PayloadsBucketPolicy", "TasksTable",
	}
	skeletonParameters = []string{
		"AgentCoreGatewayRoleArn", "AuditEntityDimension", "AuditRetentionDays", "AuthMode", "CallKeyGrace",
		"DeployAgentCoreGateway", "IamCallerScopes", "JwtAudience", "JwtIssuer", "LongRunningConcurrency", "PayloadRetentionDays",
	}
	skeletonConditions = []string{"DeployAgentCore", "HasAgentCoreGateway", "ReserveLongRunning", "UseIamAuth"}
	skeletonRules      = []string{"AgentCoreNeedsJwtSettings"}
	skeletonOutputs    = []string{
		"AgentCoreGatewayUrl", "AgentCoreInterceptorFunctionArn", "AuditTableName", "GatewayFunctionArn",
		"GatewayFunctionRoleArn", "McpCallerPolicyArn", "McpUrl", "PayloadsBucketName", "TasksTableName",
	}
	// The resources of one tool, by suffix of its prefix.
	toolResourceSuffixes = []string{
		"AgentCoreGatewayPermission", "AgentCorePermission", "AgentCoreTarget", "CallKey", "CallKeyPolicy",
		"Function", "GatewayPermission",
	}
)

// toolResources is the logical ids of the resources tool's region defines.
func toolResources(tool string) []string {
	var out []string
	for _, s := range toolResourceSuffixes {
		out = append(out, catalog.Prefix(tool)+s)
	}
	return out
}

// checkTemplate checks a generated template against its catalog: exactly
// the skeleton and one function per tool (with the tool's region's other
// resources), each function's grants exactly what its declaration
// generates, its settings and environment as declared. user are the
// project's own resources and outputs, which must be there too.
func checkTemplate(t *testing.T, src string, cat *catalog.File, userResources, userOutputs []string) *samtemplate.Template {
	t.Helper()
	tpl := parsed(t, src)
	if tpl.Transform != "AWS::Serverless-2016-10-31" {
		t.Errorf("Transform %v", tpl.Transform)
	}
	if tpl.Globals != nil {
		t.Errorf("the template has Globals %v: generated functions state every property", tpl.Globals)
	}
	wantResources := slices.Concat(skeletonResources, userResources)
	wantOutputs := slices.Concat(skeletonOutputs, userOutputs)
	wantFunctions := []string{"AgentCoreInterceptorFunction", "GatewayFunction"}
	for _, e := range cat.Tools {
		wantResources = append(wantResources, toolResources(e.Tool.Name)...)
		wantOutputs = append(wantOutputs, e.Function+"Arn")
		wantFunctions = append(wantFunctions, e.Function)
	}
	slices.Sort(wantResources)
	slices.Sort(wantOutputs)
	slices.Sort(wantFunctions)
	if got := sortedNames(tpl.Resources("")); !slices.Equal(got, wantResources) {
		t.Errorf("resources\n  %v\nwant\n  %v", got, wantResources)
	}
	if got := tpl.LogicalIDs(samtemplate.TypeServerlessFunction); !slices.Equal(got, wantFunctions) {
		t.Errorf("functions %v, want %v (the skeleton's and one per tool)", got, wantFunctions)
	}
	if got := sortedNames(tpl.Outputs); !slices.Equal(got, wantOutputs) {
		t.Errorf("outputs\n  %v\nwant\n  %v", got, wantOutputs)
	}
	for name, want := range map[string][]string{"conditions": skeletonConditions, "rules": skeletonRules} {
		m := map[string][]string{"conditions": sortedNames(tpl.Conditions), "rules": sortedNames(tpl.Rules)}
		if !slices.Equal(m[name], want) {
			t.Errorf("%s %v, want %v", name, m[name], want)
		}
	}
	for _, p := range skeletonParameters {
		if _, ok := tpl.Parameters[p]; !ok {
			t.Errorf("no parameter %s", p)
		}
	}

	for _, e := range cat.Tools {
		fn, ok := tpl.Resource(e.Function)
		if !ok {
			continue // reported above
		}
		if got, want := grantsOf(t, fn), wantGrants(e.Tool); !slices.Equal(got, want) {
			t.Errorf("%s grants\n  %v\nwant (from its declaration)\n  %v", e.Function, got, want)
		}
		p := fn.Properties
		if p["Timeout"] != e.Tool.TimeoutSeconds || p["MemorySize"] != e.Tool.MemoryMB {
			t.Errorf("%s: Timeout %v, MemorySize %v; declared %d s, %d MB", e.Function, p["Timeout"], p["MemorySize"], e.Tool.TimeoutSeconds, e.Tool.MemoryMB)
		}
		env := envOf(fn)
		want := map[string]string{"MCPFN_CALL_KEY_SECRET": catalog.Prefix(e.Tool.Name) + "CallKey", "MCPFN_AUDIT_TABLE": "AuditTable", "MCPFN_TASKS_TABLE": "TasksTable",
			"MCPFN_PAYLOADS_BUCKET": "PayloadsBucket"}
		for _, ta := range e.Tool.Tables {
			want[ta.Env] = ta.Table
		}
		for _, b := range e.Tool.Buckets {
			want[b.Env] = b.Bucket
		}
		for k, ref := range want {
			if fn, arg, _ := samtemplate.Intrinsic(env[k]); fn != "Ref" || arg != ref {
				t.Errorf("%s: %s = %v, want !Ref %s", e.Function, k, env[k], ref)
			}
		}
		if _, ok := p["Role"]; ok {
			t.Errorf("%s shares a role", e.Function)
		}
	}
	return tpl
}

// TestGenerateANewTemplate: from nothing, Generate writes a template that
// parses, holds the whole skeleton, and gives each tool one function whose
// role grants exactly what its declaration generates.
func TestGenerateANewTemplate(t *testing.T) {
	cat := catalogOf(echo)
	src := generate(t, "", cat)
	checkTemplate(t, src, cat, nil, nil)
	if !strings.HasPrefix(src, "AWSTemplateFormatVersion: \"2010-09-09\"\nTransform: AWS::Serverless-2016-10-31\nDescription: \"a test project\"\n") {
		t.Errorf("a new template starts\n%s", src[:min(len(src), 200)])
	}
	if again := generate(t, src, cat); again != src {
		t.Errorf("a second Generate changes a new template:\n%s", linediff.Unified("first", "second", src, again, 2))
	}
}

// TestGenerateIntoTheProjectsTemplate: into a template with the project's
// own tables, each tool's role is exactly its declared access (an index
// access on the index's ARN only), and the project's resources, parameter
// and output are all still there.
func TestGenerateIntoTheProjectsTemplate(t *testing.T) {
	cat := catalogOf(noteAdd, noteAttach, noteDelete, noteList, echo)
	src := generate(t, userTemplate, cat)
	tpl := checkTemplate(t, src, cat, []string{"AttachmentsBucket", "NotesTable", "TagsTable"}, []string{"NotesTableName"})
	if _, ok := tpl.Parameters["NotesRetentionDays"]; !ok {
		t.Error("the project's parameter is gone")
	}
	// note_list reads the index and only the index.
	list, _ := tpl.Resource("NoteListFunction")
	for _, g := range grantsOf(t, list) {
		if strings.HasPrefix(g, "dynamodb:Query") && g != "dynamodb:Query on NotesTable/index/byOwner" {
			t.Errorf("note_list may %s", g)
		}
	}
	// note_attach writes attachments under notes/ only, and reads any
	// version of the bucket's objects; the payloads bucket only under
	// its own prefixes (checkTemplate).
	attach, _ := tpl.Resource("NoteAttachFunction")
	for _, g := range grantsOf(t, attach) {
		if strings.Contains(g, "AttachmentsBucket") && !slices.Contains([]string{
			"s3:GetObject on AttachmentsBucket/notes/*", "s3:PutObject on AttachmentsBucket/notes/*", "s3:GetObjectVersion on AttachmentsBucket/*",
		}, g) {
			t.Errorf("note_attach may %s", g)
		}
	}
}

// TestEveryRolesPayloadGrantsAreItsOwnPrefixes: in the payloads bucket a
// tool's role reaches only "<tool>/results/" and "<tool>/args/", the
// gateway's only the args/ (to write) and results/ (to read) prefixes of
// each tool by name; no role names a key pattern that crosses tools.
func TestEveryRolesPayloadGrantsAreItsOwnPrefixes(t *testing.T) {
	cat := catalogOf(noteAdd, noteAttach, noteList, echo)
	tpl := parsed(t, generate(t, userTemplate, cat))
	onPayloads := func(fn string) []string {
		r, _ := tpl.Resource(fn)
		var out []string
		for _, g := range grantsOf(t, r) {
			if _, on, _ := strings.Cut(g, " on "); strings.HasPrefix(on, "PayloadsBucket") {
				out = append(out, g)
			}
		}
		return out
	}
	var gw []string
	for _, e := range cat.Tools {
		n := e.Tool.Name
		want := []string{
			"s3:GetObject on PayloadsBucket/" + n + "/args/*", "s3:GetObject on PayloadsBucket/" + n + "/results/*",
			"s3:GetObjectVersion on PayloadsBucket/" + n + "/args/*", "s3:GetObjectVersion on PayloadsBucket/" + n + "/results/*",
			"s3:PutObject on PayloadsBucket/" + n + "/results/*",
		}
		if got := onPayloads(e.Function); !slices.Equal(got, want) {
			t.Errorf("%s on the payloads bucket\n  %v\nwant\n  %v", e.Function, got, want)
		}
		gw = append(gw, "s3:PutObject on PayloadsBucket/"+n+"/args/*",
			"s3:GetObject on PayloadsBucket/"+n+"/results/*", "s3:GetObjectVersion on PayloadsBucket/"+n+"/results/*")
	}
	slices.Sort(gw)
	if got := onPayloads("GatewayFunction"); !slices.Equal(got, gw) {
		t.Errorf("GatewayFunction on the payloads bucket\n  %v\nwant\n  %v", got, gw)
	}
	for _, id := range []string{"AgentCoreInterceptorFunction"} {
		if got := onPayloads(id); len(got) > 0 {
			t.Errorf("%s may %v", id, got)
		}
	}
}

// TestGenerateIsIdempotent: Generate of its own output changes nothing,
// whatever it started from.
func TestGenerateIsIdempotent(t *testing.T) {
	for name, tc := range map[string]struct {
		src string
		cat *catalog.File
	}{
		"new":              {"", catalogOf(echo)},
		"project":          {userTemplate, catalogOf(noteAdd, noteList)},
		"project, 5 tools": {userTemplate, catalogOf(noteAdd, noteAttach, noteDelete, noteList, echo)},
		"edited":           {handEdited(t), catalogOf(noteAdd, noteList)},
	} {
		t.Run(name, func(t *testing.T) {
			once := generate(t, tc.src, tc.cat)
			if twice := generate(t, once, tc.cat); twice != once {
				t.Errorf("Generate(Generate(x)) != Generate(x):\n%s", linediff.Unified("once", "twice", once, twice, 2))
			}
		})
	}
}

// handEdited is the project's template after a first `mcpfn template`,
// with resources, a parameter, an output and comments of the project's
// written before, between and after mcpfn's regions.
func handEdited(t *testing.T) string {
	t.Helper()
	src := generate(t, userTemplate, catalogOf(noteAdd, noteList))
	edits := []struct{ after, insert string }{
		// Before the parameters region, right after the section key.
		{"Parameters:\n", "  # The project's parameter, before mcpfn's.\n  Stage:\n    Type: String\n    Default: dev\n"},
		// Before the resources region.
		{"Resources:\n", "  # The project's queue, before mcpfn's resources.\n  NotesQueue:\n    Type: AWS::SQS::Queue\n\n"},
		// Between two tool regions.
		{"  # <<< mcpfn tool note_add\n", "\n  # Between two tools.\n  NotesTopic:\n    Type: AWS::SNS::Topic\n    Properties:\n      TopicName: !Sub \"${AWS::StackName}-notes\"\n"},
		// After the last region of Resources and before Outputs.
		{"  # <<< mcpfn tool note_list\n", "  NotesBucket:   # odd spacing, kept as written\n    Type: AWS::S3::Bucket\n"},
		// Before the outputs region.
		{"Outputs:\n", "  QueueUrl:\n    Value: !Ref NotesQueue\n"},
	}
	for _, e := range edits {
		if !strings.Contains(src, e.after) {
			t.Fatalf("no %q in the generated template", e.after)
		}
		src = strings.Replace(src, e.after, e.after+e.insert, 1)
	}
	return src + "# The very end, after every region.\n"
}

// TestTheProjectsLinesSurviveRegeneration: the project's resources,
// parameters, outputs and comments, before, between and after mcpfn's
// regions, are byte for byte what they were after Generate (with the same
// tools and with another added).
func TestTheProjectsLinesSurviveRegeneration(t *testing.T) {
	src := handEdited(t)
	again := generate(t, src, catalogOf(noteAdd, noteList))
	if again != src {
		t.Fatalf("regenerating with the same tools changed the template:\n%s", linediff.Unified("edited", "regenerated", src, again, 2))
	}
	added := generate(t, src, catalogOf(noteAdd, noteDelete, noteList))
	if got, want := withoutBlankBefore(t, added, "tool note_delete"), outsideLines(t, src); !slices.Equal(got, want) {
		t.Errorf("adding a tool changed the project's lines:\n%s", linediff.Unified("before", "after", strings.Join(want, "\n"), strings.Join(got, "\n"), 2))
	}
	checkTemplate(t, added, catalogOf(noteAdd, noteDelete, noteList),
		[]string{"AttachmentsBucket", "NotesBucket", "NotesQueue", "NotesTable", "NotesTopic", "TagsTable"}, []string{"NotesTableName", "QueueUrl"})
}

// TestAddingAToolChangesOnlyItsRegionAndTheSharedLists: regenerating with
// one more tool adds its region and, in the skeleton, only lines that name
// it (the signers' tool maps, the grant lists, its output); every other
// tool's region and every line of the project's are byte-identical.
func TestAddingAToolChangesOnlyItsRegionAndTheSharedLists(t *testing.T) {
	before := generate(t, handEdited(t), catalogOf(noteAdd, noteList))
	after := generate(t, before, catalogOf(noteAdd, noteDelete, noteList))
	checkOnlyToolChanged(t, before, after, "note_delete")

	// And the other way: removing it gives back the template it was
	// added to, byte for byte.
	if removed := generate(t, after, catalogOf(noteAdd, noteList)); removed != before {
		t.Errorf("adding then removing a tool changed the template:\n%s", linediff.Unified("before", "after", before, removed, 2))
	}
}

// TestRemovingAToolRemovesOnlyItsRegion: removing a tool whose region sits
// between others removes that region (and the blank line before it) and,
// in the skeleton, only the lines that name it.
func TestRemovingAToolRemovesOnlyItsRegion(t *testing.T) {
	before := generate(t, handEdited(t), catalogOf(noteAdd, noteList))
	before = generate(t, before, catalogOf(noteAdd, noteDelete, noteList, echo))
	after := generate(t, before, catalogOf(noteAdd, noteList, echo))
	checkOnlyToolChanged(t, after, before, "note_delete")
	checkTemplate(t, after, catalogOf(noteAdd, noteList, echo),
		[]string{"AttachmentsBucket", "NotesBucket", "NotesQueue", "NotesTable", "NotesTopic", "TagsTable"}, []string{"NotesTableName", "QueueUrl"})
}

// checkOnlyToolChanged checks that with differs from without only by
// tool's region and the skeleton lines that name tool.
func checkOnlyToolChanged(t *testing.T, without, with, tool string) {
	t.Helper()
	region := "tool " + tool
	bw, bo := regionBodies(t, with), regionBodies(t, without)
	if _, ok := bo[region]; ok {
		t.Fatalf("the template without %s has its region", tool)
	}
	if _, ok := bw[region]; !ok {
		t.Fatalf("the template with %s has no region for it", tool)
	}
	if got, want := sortedNames(bw), append(sortedNames(bo), region); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Errorf("regions %v, want %v and %q", got, sortedNames(bo), region)
	}
	if got, want := withoutBlankBefore(t, with, region), outsideLines(t, without); !slices.Equal(got, want) {
		t.Errorf("the project's lines differ:\n%s", linediff.Unified("without", "with", strings.Join(want, "\n"), strings.Join(got, "\n"), 2))
	}
	prefix := catalog.Prefix(tool)
	for name, lines := range bo {
		other := bw[name]
		if strings.HasPrefix(name, "tool ") {
			if !slices.Equal(lines, other) {
				t.Errorf("region %q changed:\n%s", name, linediff.Unified("without", "with", strings.Join(lines, "\n"), strings.Join(other, "\n"), 1))
			}
			continue
		}
		// A skeleton region: every line removed is a tool map
		// (tool=${…},…), every line added names the tool.
		d := linediff.Unified("without", "with", strings.Join(lines, "\n"), strings.Join(other, "\n"), 0)
		for _, l := range strings.Split(d, "\n") {
			switch {
			case l == "" || strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "+++ ") || strings.HasPrefix(l, "@@"):
			case strings.HasPrefix(l, "-"):
				if !strings.Contains(l, "=${") {
					t.Errorf("region %q: the line %q went", name, l[1:])
				}
			case strings.HasPrefix(l, "+"):
				if !strings.Contains(l, prefix) && !strings.Contains(l, tool+"=") && !strings.Contains(l, "/"+tool+"/") {
					t.Errorf("region %q: the added line %q does not name %s", name, l[1:], tool)
				}
			}
		}
		if name == "parameters" || name == "rules" || name == "conditions" {
			if d != "" {
				t.Errorf("region %q depends on the tools:\n%s", name, d)
			}
		}
	}
}

// TestAHandEditInARegionIsUndone: a line changed, added or removed inside
// a region (or its begin marker's comment rewritten) is put back as
// generated, so `mcpfn template -check`, which compares, sees it.
func TestAHandEditInARegionIsUndone(t *testing.T) {
	cat := catalogOf(noteAdd, noteList)
	src := generate(t, userTemplate, cat)
	for name, edit := range map[string]func(string) string{
		"memory": func(s string) string { return strings.Replace(s, "    MemorySize: 512\n", "    MemorySize: 4096\n", 1) },
		"a widened grant": func(s string) string {
			return strings.Replace(s, "            Action: dynamodb:Query\n", "            Action: [dynamodb:Query, dynamodb:Scan]\n", 1)
		},
		"a line added": func(s string) string {
			return strings.Replace(s, "  NoteAddFunction:\n", "  NoteAddFunction:\n    DeletionPolicy: Retain\n", 1)
		},
		"a line removed": func(s string) string { return strings.Replace(s, "      Tracing: Active\n", "", 1) },
		"the marker's comment": func(s string) string {
			return strings.Replace(s, "  # >>> mcpfn tool note_add: generated by `mcpfn template`; do not edit", "  # >>> mcpfn tool note_add: generated by hand", 1)
		},
		"a region emptied": func(s string) string {
			d := mustParse(t, s)
			r := d.region("outputs")
			return strings.Join(slices.Delete(slices.Clone(d.lines), r.begin+1, r.end), "\n") + "\n"
		},
	} {
		t.Run(name, func(t *testing.T) {
			edited := edit(src)
			if edited == src {
				t.Fatal("the edit changed nothing: the fixture moved")
			}
			if got := generate(t, edited, cat); got != src {
				t.Errorf("Generate kept the edit:\n%s", linediff.Unified("generated", "regenerated", src, got, 2))
			}
		})
	}
}

// TestADamagedMarkerIsAClearError: a marker whose indentation, name or
// form was changed, or that was deleted, stops Generate with the line and
// what to do, rather than a guess at where the region ends.
func TestADamagedMarkerIsAClearError(t *testing.T) {
	cat := catalogOf(noteAdd, noteList)
	src := generate(t, userTemplate, cat)
	lineOf := func(s string) string {
		for i, l := range strings.Split(src, "\n") {
			if l == s {
				return "line " + strconv.Itoa(i+1)
			}
		}
		t.Fatalf("no line %q", s)
		return ""
	}
	begin := "  # >>> mcpfn tool note_add: generated by `mcpfn template`; do not edit (edit the tool's declaration and run `mcpfn template`)"
	end := "  # <<< mcpfn tool note_add"
	for name, tc := range map[string]struct {
		from, to string
		want     []string
	}{
		"reindented begin":        {begin, "  " + begin, []string{lineOf(begin), "damaged mcpfn region marker", "indented two spaces"}},
		"begin without its colon": {begin, strings.Replace(begin, "note_add:", "note_add", 1), []string{lineOf(begin), "damaged mcpfn region marker"}},
		"renamed end":             {end, "  # <<< mcpfn tool note_ad", []string{lineOf(end), `"tool note_ad"`, "without its beginning"}},
		"deleted end":             {end + "\n", "", []string{`"tool note_add"`, "opens inside"}},
		"deleted begin":           {begin + "\n", "", []string{`"tool note_add"`, "without its beginning"}},
	} {
		t.Run(name, func(t *testing.T) {
			if !strings.Contains(src, tc.from) {
				t.Fatalf("no %q in the template", tc.from)
			}
			msg := generateErr(t, strings.Replace(src, tc.from, tc.to, 1), cat)
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not say %q", msg, w)
				}
			}
		})
	}
}
