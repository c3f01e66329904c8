package templatetest

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

// dataGrants derives from the handlers package's source what each tool's
// role must grant on the broadcasts table: every DynamoDB call reachable
// from the handler its declaration names (declare(def, (*Store).m)),
// following the Store's own methods. A call db.M(…) on the Store's
// DynamoAPI field is the IAM action dynamodb:M on BroadcastsTable — on its
// index when the calling method sets IndexName. So a new tool needs no line
// in the IAM test, and a role can grant neither more nor less than its
// handler's code can call.
func dataGrants(t *testing.T) map[string]map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot(t), "handlers", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	consts := map[string]string{}         // string constant → value
	methods := map[string]*ast.FuncDecl{} // Store method → declaration
	var decls []*ast.CallExpr
	dbField := ""
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
						if id, ok := fld.Type.(*ast.Ident); ok && id.Name == "DynamoAPI" && len(fld.Names) == 1 {
							dbField = fld.Names[0].Name
						}
					}
				}
			case *ast.FuncDecl:
				if recv := storeReceiver(n); recv != "" {
					methods[n.Name.Name] = n
				}
			case *ast.CallExpr:
				if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "declare" && len(n.Args) == 2 {
					decls = append(decls, n)
				}
			}
			return true
		})
	}
	if dbField == "" || len(decls) == 0 {
		t.Fatal("handlers: no Store field of type DynamoAPI, or no declare(…) calls: dataGrants no longer reads the package")
	}

	var reach func(m string, seen map[string]bool, out map[string]bool)
	reach = func(m string, seen map[string]bool, out map[string]bool) {
		fn := methods[m]
		if fn == nil || seen[m] {
			return
		}
		seen[m] = true
		recv := storeReceiver(fn)
		indexed := false
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			if kv, ok := n.(*ast.KeyValueExpr); ok {
				if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "IndexName" {
					indexed = true
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
			case *ast.SelectorExpr: // recv.db.Action(…)
				if id, ok := x.X.(*ast.Ident); ok && id.Name == recv && x.Sel.Name == dbField {
					resource := "BroadcastsTable"
					if indexed {
						resource += "/index/" + handlers.ChannelIndex
					}
					out["dynamodb:"+sel.Sel.Name+" on "+resource] = true
				}
			}
			return true
		})
	}

	grants := map[string]map[string]bool{}
	for _, call := range decls {
		name := ""
		if def, ok := call.Args[0].(*ast.CompositeLit); ok {
			for _, e := range def.Elts {
				kv, _ := e.(*ast.KeyValueExpr)
				if k, ok := kv.Key.(*ast.Ident); !ok || k.Name != "Name" {
					continue
				}
				switch v := kv.Value.(type) {
				case *ast.Ident:
					name = consts[v.Name]
				case *ast.BasicLit:
					name, _ = strconv.Unquote(v.Value)
				}
			}
		}
		sel, _ := call.Args[1].(*ast.SelectorExpr)
		if name == "" || sel == nil || methods[sel.Sel.Name] == nil {
			t.Fatalf("handlers: %s: declare(…) needs a ToolDef literal with a constant Name and a (*Store).method handler", fset.Position(call.Pos()))
		}
		grants[name] = map[string]bool{}
		reach(sel.Sel.Name, map[string]bool{}, grants[name])
	}
	return grants
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

// TestDataGrantsAreDerivedFromTheHandlers pins the derivation on the four
// tools whose calls are known, so that a change in how the handlers are
// written cannot silently empty every role's expectation.
func TestDataGrantsAreDerivedFromTheHandlers(t *testing.T) {
	got := dataGrants(t)
	want := map[string][]string{
		"broadcast_create": {"dynamodb:GetItem on BroadcastsTable", "dynamodb:PutItem on BroadcastsTable"},
		"broadcast_get":    {"dynamodb:GetItem on BroadcastsTable"},
		"broadcast_list":   {"dynamodb:Query on BroadcastsTable/index/" + handlers.ChannelIndex},
		"broadcast_delete": {"dynamodb:DeleteItem on BroadcastsTable"},
	}
	for tool, w := range want {
		if g := slices.Sorted(maps.Keys(got[tool])); !slices.Equal(g, w) {
			t.Errorf("%s: derived %v, want %v", tool, g, w)
		}
	}
	for _, tool := range handlers.Catalog() {
		if _, ok := got[tool.Name()]; !ok {
			t.Errorf("catalog tool %s has no declaration dataGrants can read", tool.Name())
		}
	}
}
