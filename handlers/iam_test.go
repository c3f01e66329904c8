package handlers_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/handlers"
)

// A tool's role is what its declaration's Tables and Buckets say (`mcpfn
// template` generates it, and `mcpfn template -check` keeps it so). Whether
// the declaration says what the handler does is the demo's own business:
// these tests derive, from this package's source, the DynamoDB and S3 calls
// each tool's handler can make, and hold its declared Tables and Buckets to
// exactly those — a declaration that grants more (or less) than its code
// calls fails here.

// calledActions derives from the package's source what each declared
// tool's handler calls on the broadcasts table and the attachments bucket:
// every DynamoDB and S3 call reachable from the handler its declaration
// names (adapter.Declare(def, (*Store).m)), following the Store's own
// methods. A call s.db.M(…) on the Store's DynamoAPI field is the action M,
// on the index the calling method names in IndexName when it names one ("M
// on index"). A call s.objects.M(ctx, &s3.MInput{…}) on its ObjectAPI field
// is the action "s3:M" — "s3:MVersion" when the input names a VersionId,
// which S3 authorizes as that action. Keyed by tool name.
func calledActions(t *testing.T) map[string][]string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	consts := map[string]string{}         // string constant → value
	methods := map[string]*ast.FuncDecl{} // Store method → declaration
	var decls []*ast.CallExpr
	dbField, objField := "", ""
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec:
				for i, name := range n.Names {
					if i < len(n.Values) {
						if lit, ok := n.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							consts[name.Name], _ = strconv.Unquote(lit.Value)
						}
					}
				}
			case *ast.TypeSpec:
				if st, ok := n.Type.(*ast.StructType); ok && n.Name.Name == "Store" {
					for _, fld := range st.Fields.List {
						id, ok := fld.Type.(*ast.Ident)
						switch {
						case !ok || len(fld.Names) != 1:
						case id.Name == "DynamoAPI":
							dbField = fld.Names[0].Name
						case id.Name == "ObjectAPI":
							objField = fld.Names[0].Name
						}
					}
				}
			case *ast.FuncDecl:
				if storeReceiver(n) != "" {
					methods[n.Name.Name] = n
				}
			case *ast.CallExpr:
				if isAdapterDeclare(n.Fun) && len(n.Args) == 2 {
					decls = append(decls, n)
				}
			}
			return true
		})
	}
	if dbField == "" || objField == "" || len(decls) == 0 {
		t.Fatal("handlers: no Store field of type DynamoAPI or ObjectAPI, or no adapter.Declare(…) calls: calledActions no longer reads the package")
	}

	// stringValue is the string an expression names: a literal, a
	// constant, or the one argument of a call such as aws.String(c).
	var stringValue func(e ast.Expr) string
	stringValue = func(e ast.Expr) string {
		switch v := e.(type) {
		case *ast.BasicLit:
			s, _ := strconv.Unquote(v.Value)
			return s
		case *ast.Ident:
			return consts[v.Name]
		case *ast.CallExpr:
			if len(v.Args) == 1 {
				return stringValue(v.Args[0])
			}
		}
		return ""
	}

	var reach func(m string, seen, out map[string]bool)
	reach = func(m string, seen, out map[string]bool) {
		fn := methods[m]
		if fn == nil || seen[m] {
			return
		}
		seen[m] = true
		recv := storeReceiver(fn)
		index := ""
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			if kv, ok := n.(*ast.KeyValueExpr); ok {
				if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "IndexName" {
					if index = stringValue(kv.Value); index == "" {
						t.Errorf("handlers: %s: IndexName %v is no constant string", fset.Position(kv.Pos()), kv.Value)
					}
				}
			}
			return true
		})
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			switch x := sel.X.(type) {
			case *ast.Ident: // recv.method(…)
				if x.Name == recv {
					reach(sel.Sel.Name, seen, out)
				}
			case *ast.SelectorExpr: // recv.db.Action(…), recv.objects.Action(…)
				id, ok := x.X.(*ast.Ident)
				switch {
				case !ok || id.Name != recv:
				case x.Sel.Name == dbField:
					action := sel.Sel.Name
					if index != "" {
						action += " on " + index
					}
					out[action] = true
				case x.Sel.Name == objField:
					out[s3Action(t, fset, sel.Sel.Name, call)] = true
				}
			}
			return true
		})
	}

	called := map[string][]string{}
	for _, call := range decls {
		name := ""
		if def, ok := call.Args[0].(*ast.CompositeLit); ok {
			for _, e := range def.Elts {
				kv, _ := e.(*ast.KeyValueExpr)
				if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Name" {
					name = stringValue(kv.Value)
				}
			}
		}
		sel, _ := call.Args[1].(*ast.SelectorExpr)
		if name == "" || sel == nil || methods[sel.Sel.Name] == nil {
			t.Fatalf("handlers: %s: adapter.Declare(…) needs a ToolDef literal with a constant Name and a (*Store).method handler", fset.Position(call.Pos()))
		}
		out := map[string]bool{}
		reach(sel.Sel.Name, map[string]bool{}, out)
		called[name] = slices.Sorted(maps.Keys(out))
	}
	return called
}

// s3Action is the IAM action of an S3 call op(ctx, &s3.<op>Input{…}): op,
// or op+"Version" when the input sets VersionId (S3 authorizes GetObject
// and DeleteObject of a named version as GetObjectVersion and
// DeleteObjectVersion). An input that is no literal cannot be read, and
// fails the test.
func s3Action(t *testing.T, fset *token.FileSet, op string, call *ast.CallExpr) string {
	t.Helper()
	var lit *ast.CompositeLit
	if len(call.Args) >= 2 {
		if u, ok := call.Args[1].(*ast.UnaryExpr); ok && u.Op == token.AND {
			lit, _ = u.X.(*ast.CompositeLit)
		}
	}
	if lit == nil {
		t.Errorf("handlers: %s: the input of S3 %s is no &s3.%sInput{…} literal, so calledActions cannot tell which action it is", fset.Position(call.Pos()), op, op)
		return "s3:" + op
	}
	for _, e := range lit.Elts {
		if kv, ok := e.(*ast.KeyValueExpr); ok {
			if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "VersionId" && (op == "GetObject" || op == "DeleteObject") {
				return "s3:" + op + "Version"
			}
		}
	}
	return "s3:" + op
}

// isAdapterDeclare reports whether fun is adapter.Declare (with or without
// explicit type arguments).
func isAdapterDeclare(fun ast.Expr) bool {
	switch f := fun.(type) {
	case *ast.IndexExpr:
		fun = f.X
	case *ast.IndexListExpr:
		fun = f.X
	}
	sel, ok := fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "adapter" && sel.Sel.Name == "Declare"
}

// storeReceiver is the receiver's name of a (*Store) method, else "".
func storeReceiver(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) != 1 || len(fn.Recv.List[0].Names) != 1 {
		return ""
	}
	star, ok := fn.Recv.List[0].Type.(*ast.StarExpr)
	if !ok {
		return ""
	}
	if id, ok := star.X.(*ast.Ident); !ok || id.Name != "Store" {
		return ""
	}
	return fn.Recv.List[0].Names[0].Name
}

// TestDeclaredAccessIsWhatTheHandlersCall: each tool declares exactly the
// DynamoDB and S3 actions its handler's code can make — on the index it
// queries, not the table; on the attachments' prefix, not the bucket — and
// only on the table and bucket the store is built over (the ones TableEnv
// and AttachmentsEnv name), so the role `mcpfn template` generates from the
// declaration is the least the code needs.
func TestDeclaredAccessIsWhatTheHandlersCall(t *testing.T) {
	called := calledActions(t)
	for _, tool := range handlers.Catalog() {
		var declared []string
		for _, ta := range tool.Tables() {
			if ta.Env != handlers.TableEnv {
				t.Errorf("%s declares %s through %s; the store reads its table from %s", tool.Name(), ta.Table, ta.Env, handlers.TableEnv)
			}
			for _, a := range ta.Actions {
				if ta.Index != "" {
					a += " on " + ta.Index
				}
				declared = append(declared, a)
			}
		}
		for _, b := range tool.Buckets() {
			if b.Bucket != "AttachmentsBucket" || b.Env != handlers.AttachmentsEnv || b.Prefix != handlers.AttachmentPrefix {
				t.Errorf("%s declares %s through %s under %q; the store keeps attachments in AttachmentsBucket, named by %s, under %q",
					tool.Name(), b.Bucket, b.Env, b.Prefix, handlers.AttachmentsEnv, handlers.AttachmentPrefix)
			}
			for _, a := range b.Actions {
				declared = append(declared, "s3:"+a)
			}
		}
		slices.Sort(declared)
		got, ok := called[tool.Name()]
		if !ok {
			t.Errorf("catalog tool %s has no declaration calledActions can read", tool.Name())
			continue
		}
		if !slices.Equal(declared, got) {
			t.Errorf("%s declares %v; its handler calls %v", tool.Name(), declared, got)
		}
	}
}

// TestCalledActionsAreDerivedFromTheHandlers pins the derivation on the
// tools whose calls are known, so that a change in how the handlers are
// written cannot silently empty both sides of the comparison above.
func TestCalledActionsAreDerivedFromTheHandlers(t *testing.T) {
	got := calledActions(t)
	want := map[string][]string{
		handlers.ToolCreate:     {"GetItem", "PutItem"},
		handlers.ToolGet:        {"GetItem"},
		handlers.ToolList:       {"Query on " + handlers.ChannelIndex},
		handlers.ToolDelete:     {"DeleteItem", "s3:DeleteObject"},
		handlers.ToolDigest:     {"Query on " + handlers.ChannelIndex},
		handlers.ToolAttach:     {"GetItem", "UpdateItem", "s3:DeleteObject", "s3:PutObject"},
		handlers.ToolAttachment: {"GetItem", "s3:GetObjectVersion"},
		handlers.ToolExport:     {"Query on " + handlers.ChannelIndex, "s3:GetObjectVersion"},
	}
	if len(got) != len(want) {
		t.Errorf("derived the calls of %d tools, want %d", len(got), len(want))
	}
	for tool, w := range want {
		if !slices.Equal(got[tool], w) {
			t.Errorf("%s: derived %v, want %v", tool, got[tool], w)
		}
	}
}
