package adapter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/adapter"
)

// notesDef declares everything a declaration carries: annotations, scopes,
// task support, refined schemas and deployment needs.
var notesDef = func() adapter.ToolDef[labelIn, labelOut] {
	d := labelDef
	d.Name = "note_add"
	d.Title = "Add a note"
	d.Description = "Adds a note."
	d.Destructive, d.OpenWorld = true, true
	d.Scopes = []string{"notes:write"}
	d.TaskSupport = adapter.TaskOptional
	d.Tables = []adapter.TableAccess{
		{Table: "NotesTable", Env: "NOTES_TABLE", Actions: []string{"dynamodb:PutItem", "GetItem", "PutItem"}},
		{Table: "NotesTable", Env: "NOTES_TABLE", Index: "byOwner", Actions: []string{"Query"}},
	}
	d.Buckets = []adapter.BucketAccess{
		{Bucket: "NotesBucket", Env: "NOTES_BUCKET", Actions: []string{"s3:PutObject", "GetObject", "PutObject"}, Prefix: "attachments/"},
		{Bucket: "NotesBucket", Env: "NOTES_BUCKET", Actions: []string{"GetObjectVersion"}},
	}
	d.Timeout = 30 * time.Second
	d.MemoryMB = 512
	return d
}()

// TestDeclarationRoundTripsThroughJSON: a tool rebuilt from its declaration,
// after the JSON a function prints and the catalog file holds, lists exactly
// as the tool itself and declares the same needs — the gateway's catalog is
// the functions' definitions, not a copy that may drift.
func TestDeclarationRoundTripsThroughJSON(t *testing.T) {
	tool := adapter.Declare(notesDef, func(struct{}, context.Context, *adapter.Call, labelIn) (labelOut, error) {
		return labelOut{}, nil
	}).Tool()
	b, err := json.Marshal(tool.Declaration())
	if err != nil {
		t.Fatal(err)
	}
	var d adapter.Declaration
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	rebuilt, err := adapter.ToolFromDeclaration(d)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(listing(t, tool))
	got, _ := json.Marshal(listing(t, rebuilt))
	if !bytes.Equal(got, want) {
		t.Fatalf("rebuilt tool lists as\n%s\nthe tool as\n%s", got, want)
	}
	again, _ := json.Marshal(rebuilt.Declaration())
	if !bytes.Equal(again, b) {
		t.Fatalf("declaration changed on the round trip:\n%s\n%s", again, b)
	}
	wantTables := []adapter.TableAccess{
		{Table: "NotesTable", Env: "NOTES_TABLE", Actions: []string{"GetItem", "PutItem"}},
		{Table: "NotesTable", Env: "NOTES_TABLE", Index: "byOwner", Actions: []string{"Query"}},
	}
	wantBuckets := []adapter.BucketAccess{
		{Bucket: "NotesBucket", Env: "NOTES_BUCKET", Actions: []string{"GetObject", "PutObject"}, Prefix: "attachments/"},
		{Bucket: "NotesBucket", Env: "NOTES_BUCKET", Actions: []string{"GetObjectVersion"}},
	}
	if !reflect.DeepEqual(d.Buckets, wantBuckets) {
		t.Fatalf("declared buckets %+v, want %+v", d.Buckets, wantBuckets)
	}
	if !reflect.DeepEqual(d.Tables, wantTables) || d.TimeoutSeconds != 30 || d.MemoryMB != 512 || d.TaskSupport != adapter.TaskOptional {
		t.Fatalf("declared needs %+v, timeout %d, memory %d, tasks %q", d.Tables, d.TimeoutSeconds, d.MemoryMB, d.TaskSupport)
	}
	d.Scopes = nil // so that the call reaches the (absent) handler
	open, err := adapter.ToolFromDeclaration(d)
	if err != nil {
		t.Fatal(err)
	}
	got2 := invokeRPC(t, newFunction(open, quietLogger()), "tools/call", `{"name":"note_add","arguments":{"label":"ok"}}`)
	if r, _ := json.Marshal(got2); got2["isError"] != true || !strings.Contains(string(r), "INTERNAL_SERVER_ERROR") {
		t.Fatalf("calling a tool built from a declaration answered %s", r)
	}
}

// TestDeclaredNeedsAreLeastPrivilege: a declaration cannot ask for more than
// named item actions on named tables and named object actions on named
// buckets (under a literal prefix), nor set the variables mcpfn and Lambda
// own (a tool choosing MCPFN_AUDIT_TABLE would choose where its evidence
// goes); timeouts and memory stay within Lambda's bounds.
func TestDeclaredNeedsAreLeastPrivilege(t *testing.T) {
	bucket := func(b adapter.BucketAccess) []adapter.BucketAccess {
		if b.Bucket == "" {
			b.Bucket = "B"
		}
		if b.Env == "" {
			b.Env = "B_BUCKET"
		}
		if b.Actions == nil {
			b.Actions = []string{"GetObject"}
		}
		return []adapter.BucketAccess{b}
	}
	for name, tc := range map[string]struct {
		tables  []adapter.TableAccess
		buckets []adapter.BucketAccess
		timeout time.Duration
		memory  int
		want    string
	}{
		"wildcard action":      {tables: []adapter.TableAccess{{Table: "T", Env: "T_TABLE", Actions: []string{"*"}}}, want: `action "*"`},
		"service wildcard":     {tables: []adapter.TableAccess{{Table: "T", Env: "T_TABLE", Actions: []string{"dynamodb:*"}}}, want: `action "dynamodb:*"`},
		"table management":     {tables: []adapter.TableAccess{{Table: "T", Env: "T_TABLE", Actions: []string{"DeleteTable"}}}, want: "DeleteTable"},
		"write on an index":    {tables: []adapter.TableAccess{{Table: "T", Env: "T_TABLE", Index: "byX", Actions: []string{"PutItem"}}}, want: "PutItem"},
		"no actions":           {tables: []adapter.TableAccess{{Table: "T", Env: "T_TABLE"}}, want: "no Actions"},
		"audit table variable": {tables: []adapter.TableAccess{{Table: "T", Env: "MCPFN_AUDIT_TABLE", Actions: []string{"GetItem"}}}, want: "reserved"},
		"aws variable":         {tables: []adapter.TableAccess{{Table: "T", Env: "AWS_ENDPOINT_URL", Actions: []string{"GetItem"}}}, want: "reserved"},
		"not a logical id":     {tables: []adapter.TableAccess{{Table: "arn:aws:dynamodb:*", Env: "T_TABLE", Actions: []string{"GetItem"}}}, want: "logical id"},
		"one variable two tables": {tables: []adapter.TableAccess{
			{Table: "A", Env: "TABLE", Actions: []string{"GetItem"}}, {Table: "B", Env: "TABLE", Actions: []string{"GetItem"}},
		}, want: "names both"},
		"a table twice": {tables: []adapter.TableAccess{
			{Table: "A", Env: "A_TABLE", Actions: []string{"GetItem"}}, {Table: "A", Env: "A_TABLE", Actions: []string{"PutItem"}},
		}, want: "twice"},
		"bucket wildcard action":   {buckets: bucket(adapter.BucketAccess{Actions: []string{"s3:*"}}), want: `action "s3:*"`},
		"bucket partial wildcard":  {buckets: bucket(adapter.BucketAccess{Actions: []string{"s3:Get*"}}), want: `action "s3:Get*"`},
		"bucket management":        {buckets: bucket(adapter.BucketAccess{Actions: []string{"PutBucketPolicy"}}), want: "PutBucketPolicy"},
		"bucket listing":           {buckets: bucket(adapter.BucketAccess{Actions: []string{"ListBucket"}}), want: "ListBucket"},
		"object acl":               {buckets: bucket(adapter.BucketAccess{Actions: []string{"PutObjectAcl"}}), want: "PutObjectAcl"},
		"bucket no actions":        {buckets: bucket(adapter.BucketAccess{Actions: []string{}}), want: "no Actions"},
		"bucket not a logical id":  {buckets: bucket(adapter.BucketAccess{Bucket: "arn:aws:s3:::b"}), want: "logical id"},
		"bucket payloads variable": {buckets: bucket(adapter.BucketAccess{Env: "MCPFN_PAYLOADS_BUCKET"}), want: "reserved"},
		"bucket lambda variable":   {buckets: bucket(adapter.BucketAccess{Env: "LAMBDA_TASK_ROOT"}), want: "reserved"},
		"prefix wildcard":          {buckets: bucket(adapter.BucketAccess{Prefix: "a/*/b"}), want: "Prefix"},
		"prefix question mark":     {buckets: bucket(adapter.BucketAccess{Prefix: "a?"}), want: "Prefix"},
		"prefix policy variable":   {buckets: bucket(adapter.BucketAccess{Prefix: "${aws:userid}/"}), want: "Prefix"},
		"prefix leading slash":     {buckets: bucket(adapter.BucketAccess{Prefix: "/a"}), want: "Prefix"},
		"prefix too long":          {buckets: bucket(adapter.BucketAccess{Prefix: strings.Repeat("a", 513)}), want: "Prefix"},
		"one variable a table and a bucket": {
			tables:  []adapter.TableAccess{{Table: "A", Env: "DATA", Actions: []string{"GetItem"}}},
			buckets: bucket(adapter.BucketAccess{Env: "DATA"}), want: "names both"},
		"a bucket prefix twice": {buckets: append(bucket(adapter.BucketAccess{Prefix: "p/"}), bucket(adapter.BucketAccess{Prefix: "p/", Actions: []string{"PutObject"}})...), want: "twice"},
		"timeout too long":      {timeout: 16 * time.Minute, want: "Timeout"},
		"timeout not seconds":   {timeout: 1500 * time.Millisecond, want: "Timeout"},
		"memory below lambda's": {memory: 64, want: "MemoryMB"},
	} {
		d := labelDef
		d.Handler = labelHandler
		d.Tables, d.Buckets, d.Timeout, d.MemoryMB = tc.tables, tc.buckets, tc.timeout, tc.memory
		if _, err := adapter.Define(d); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Define error %v, want one with %q", name, err, tc.want)
		}
	}
}

// TestStartDescribesTheToolWhenAsked runs this test binary as a function's
// main would run (adapter.Serve), with MCPFN_DESCRIBE=1: it prints the
// declaration and exits before its dependency is built — so describing needs
// none of the environment a deployed function has.
func TestStartDescribesTheToolWhenAsked(t *testing.T) {
	if os.Getenv("MCPFN_TEST_DESCRIBE_MAIN") == "1" {
		declared := adapter.Declare(notesDef, func(struct{}, context.Context, *adapter.Call, labelIn) (labelOut, error) {
			return labelOut{}, nil
		})
		adapter.Serve(declared, func(context.Context) (struct{}, error) {
			panic("the dependency was built in describe mode")
		})
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestStartDescribesTheToolWhenAsked$")
	cmd.Env = append(os.Environ(), "MCPFN_TEST_DESCRIBE_MAIN=1", adapter.EnvDescribe+"=1", "AWS_LAMBDA_RUNTIME_API=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("describe run: %v\n%s", err, stderr.String())
	}
	d, err := adapter.ParseDescription(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if d.Name != "note_add" || d.Scopes[0] != "notes:write" || len(d.Tables) != 2 {
		t.Fatalf("described %+v", d)
	}
}
