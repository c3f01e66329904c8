package boundarytest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const (
	module = "github.com/mcpfn/mcpfn"
	demo   = module + "/handlers"
)

// isDemo reports whether import path p is the demo's: handlers and its
// subpackages, and the functions that serve its tools.
func isDemo(p string) bool {
	return p == demo || strings.HasPrefix(p, demo+"/") || strings.HasPrefix(p, module+"/functions/")
}

// listed is one package of `go list -deps -test -json`: a package, a
// package recompiled for a test ("p [q.test]"), an external test package
// ("p_test [p.test]") or a test binary's main ("p.test").
type listed struct {
	ImportPath string
	ForTest    string
	Standard   bool
	Imports    []string
	Deps       []string
}

// packageGraph lists every package of the module with its tests, and
// everything they depend on, by import path as go list spells it.
func packageGraph(t *testing.T) map[string]listed {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-test", "-json=ImportPath,ForTest,Standard,Imports,Deps", module+"/...")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	graph := map[string]listed{}
	dec := json.NewDecoder(&stdout)
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		graph[p.ImportPath] = p
	}
	if _, ok := graph[demo]; !ok {
		t.Fatalf("go list does not list %s: the demo moved, and this test checks nothing", demo)
	}
	return graph
}

// plain is an import path without go list's test-variant suffix
// ("p [q.test]" → p).
func plain(p string) string {
	p, _, _ = strings.Cut(p, " ")
	return p
}

// chainToDemo returns the imports from p to the demo, shortest first found.
func chainToDemo(graph map[string]listed, p string) []string {
	prev := map[string]string{p: ""}
	queue := []string{p}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if isDemo(plain(cur)) {
			var chain []string
			for at := cur; at != ""; at = prev[at] {
				chain = append(chain, strings.TrimPrefix(at, module+"/"))
			}
			slices.Reverse(chain)
			return chain
		}
		for _, next := range graph[cur].Imports {
			if _, seen := prev[next]; !seen {
				prev[next] = cur
				queue = append(queue, next)
			}
		}
	}
	return nil
}

// dependsOnDemo reports whether a listed package has the demo among its
// dependencies.
func dependsOnDemo(p listed) bool {
	return slices.ContainsFunc(p.Deps, func(d string) bool { return isDemo(plain(d)) })
}

// TestNoPackageImportsTheDemo: no package of the module outside the demo
// depends on the demo, directly or through others.
func TestNoPackageImportsTheDemo(t *testing.T) {
	graph := packageGraph(t)
	checked := 0
	for path, p := range graph {
		if p.Standard || p.ForTest != "" || strings.HasSuffix(path, ".test") || !strings.HasPrefix(path, module) || isDemo(path) {
			continue
		}
		checked++
		if dependsOnDemo(p) {
			t.Errorf("%s depends on the demo: %s", path, strings.Join(chainToDemo(graph, path), " → "))
		}
	}
	if checked < 10 {
		t.Fatalf("checked %d packages: go list's output is not what this test reads", checked)
	}
}

// TestNoTestImportsTheDemo: no test of a package outside the demo — its
// internal or external test files, or anything they import — depends on
// the demo. A test that needs tools declares its own, or reads the
// project's catalog file (catalog.Load), as a user's project would.
func TestNoTestImportsTheDemo(t *testing.T) {
	graph := packageGraph(t)
	checked := 0
	for path, p := range graph {
		pkg, isTestMain := strings.CutSuffix(path, ".test")
		if !isTestMain || p.ForTest != "" || !strings.HasPrefix(pkg, module) || isDemo(pkg) {
			continue
		}
		checked++
		if dependsOnDemo(p) {
			t.Errorf("the tests of %s depend on the demo: %s", pkg, strings.Join(chainToDemo(graph, path), " → "))
		}
	}
	if checked < 10 {
		t.Fatalf("checked %d test binaries: go list's output is not what this test reads", checked)
	}
}

// above are the packages that may import the module's internal packages:
// the kits and commands built on everything else (decision 0042).
var above = []string{"cmd", "bench", "localtest", "mcpfntest", "internal"}

// TestOnlyTheKitsAndCommandsImportInternal: the framework's public packages
// (the adapter, the gateway, the audit, the stores, the wire format, the
// claim check, …) import no package under internal/, so the module's
// imports run one way: internal/ builds on them, never the reverse.
func TestOnlyTheKitsAndCommandsImportInternal(t *testing.T) {
	graph := packageGraph(t)
	checked := 0
	for path, p := range graph {
		rel, ok := strings.CutPrefix(path, module+"/")
		if p.Standard || p.ForTest != "" || strings.HasSuffix(path, ".test") || !ok || isDemo(path) {
			continue
		}
		if top, _, _ := strings.Cut(rel, "/"); slices.Contains(above, top) || strings.Contains(rel, "/internal/") || strings.HasSuffix(rel, "/internal") {
			continue
		}
		checked++
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, module+"/internal/") {
				t.Errorf("%s imports %s: a public package builds on nothing under internal/ (decision 0042)", rel, strings.TrimPrefix(imp, module+"/"))
			}
		}
	}
	if checked < 8 {
		t.Fatalf("checked %d packages: go list's output is not what this test reads", checked)
	}
}

// TestAToolFunctionLinksNoMCPSDK: what a tool function imports (the adapter,
// and a whole function written with it: bench-lambda's echo) does not
// depend on the MCP go-sdk; its tools/list entry is the adapter's own
// (adapter.Listing), which package mcptool turns into the go-sdk's type for
// the servers that list it. The go-sdk would add its package init to every
// function's cold start (docs/benchmarks.md).
func TestAToolFunctionLinksNoMCPSDK(t *testing.T) {
	graph := packageGraph(t)
	const sdk = "github.com/modelcontextprotocol/go-sdk"
	for _, path := range []string{module + "/adapter", module + "/bench/lambda/mcpfn_echo"} {
		p, ok := graph[path]
		if !ok {
			t.Fatalf("go list does not list %s: this test checks nothing", path)
		}
		for _, d := range p.Deps {
			if d == sdk || strings.HasPrefix(d, sdk+"/") {
				t.Errorf("%s depends on %s", strings.TrimPrefix(path, module+"/"), d)
			}
		}
	}
	// The check can fail: the gateway, which serves with the go-sdk, does.
	if p := graph[module+"/gateway"]; !slices.ContainsFunc(p.Deps, func(d string) bool { return strings.HasPrefix(d, sdk+"/") }) {
		t.Fatalf("the gateway does not depend on %s either: go list's output is not what this test reads", sdk)
	}
}
