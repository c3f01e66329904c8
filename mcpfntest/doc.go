// Package mcpfntest tests a tool the way it runs: called in-process as the
// gateway calls its Lambda function — the httptest of mcpfn.
//
// [Call], or [New] and [Function.Call], serves the tool with adapter.New,
// its function's real entry point, and signs each call with the function's
// own test key as the gateway signs it, for the caller the test chooses
// ([As], [Anonymous], [Tenant]; by default [DefaultSubject], holding the
// tool's scopes). The [Result] is what the MCP client reads — the typed
// output ([Output]), or the *adapter.Error of a failed call — and the audit
// rows the call handed to the audit, kept in memory and, with [AuditTo],
// written by a real auditor too. Progress reports reach [OnProgress]; a
// tool that asks for input (adapter.RequireInput) gets the test's
// [Answer], round after round. Nothing is mocked: decoding, the call
// token, validation, the scope gate, the hooks and the audit stage are the
// ones a deployed function runs.
//
//	package hello_test
//
//	import (
//		"context"
//		"testing"
//
//		"github.com/mcpfn/mcpfn/adapter"
//		"github.com/mcpfn/mcpfn/mcpfntest"
//	)
//
//	type In struct {
//		Name string `json:"name"`
//	}
//
//	type Out struct {
//		Greeting string `json:"greeting"`
//	}
//
//	var hello = adapter.MustDefine(adapter.ToolDef[In, Out]{
//		Name:   "hello",
//		Scopes: []string{"hello:use"},
//		Handler: func(_ context.Context, call *adapter.Call, in In) (Out, error) {
//			call.SetDimension("entityId", in.Name)
//			return Out{Greeting: "Hello, " + in.Name}, nil
//		},
//	})
//
//	func TestHello(t *testing.T) {
//		f := mcpfntest.New(t, hello)
//
//		res := f.Call(t, map[string]any{"name": "Ada"}, mcpfntest.As("ann", "hello:use"))
//		if out := mcpfntest.Output[Out](t, res); out.Greeting != "Hello, Ada" {
//			t.Errorf("greeting %q", out.Greeting)
//		}
//		if row := res.Rows[0]; row.CallerSubject != "ann" || row.Dimensions["entityId"] != "Ada" {
//			t.Errorf("audit row %+v", row)
//		}
//
//		res = f.Call(t, map[string]any{"name": "Ada"}, mcpfntest.As("bob"))
//		if res.Code() != adapter.CodeForbidden {
//			t.Errorf("bob without hello:use: %v", res.Err)
//		}
//	}
//
// A tool declared with adapter.Declare is served bound to a dependency of
// the test's own: mcpfntest.New(t, notes.Add.Bind(store)). [DynamoDB]
// starts DynamoDB Local once per test binary, with the tables of the
// project's template.yaml ([DB.Table]); [Main] stops it when the tests end:
//
//	func TestMain(m *testing.M) { mcpfntest.Main(m) }
//
// A tool that keeps files in a bucket of the project's is bound to a client
// of [S3]: the S3 stand-in of `mcpfn local` behind the same front (TLS,
// Signature Version 4, each body's checksums), one per test, with the
// buckets of template.yaml as declared there ([S3Server.Bucket]: its
// versioning too):
//
//	objects := mcpfntest.S3(t)
//	files := notes.NewFiles(objects.Client(), objects.Bucket(t, "FilesBucket"))
//	f := mcpfntest.New(t, notes.Upload.Bind(files))
package mcpfntest
