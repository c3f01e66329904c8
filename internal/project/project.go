// Package project knows the layout of a project that uses mcpfn — the
// user's Go module: its root (go.mod), template.yaml, the catalog file and
// one directory per tool function under functions/ — and asks the functions
// for their tools' declarations. `mcpfn template`, `mcpfn build` and `mcpfn
// local` all find the project and its tools through it, so they agree.
package project

import (
	"errors"
	"fmt"
	"go/build"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"golang.org/x/mod/modfile"

	"github.com/mcpfn/mcpfn/catalog"
)

// TemplateFile is the SAM template's file name at the project's root.
const TemplateFile = "template.yaml"

// FunctionsDir holds one directory per tool function, named after its tool:
// functions/note_add/main.go serves note_add.
const FunctionsDir = "functions"

// Project is a Go module that uses mcpfn.
type Project struct {
	Root   string // absolute directory of go.mod
	Module string // the module path
}

// Find returns the project whose go.mod is dir or its nearest parent.
func Find(dir string) (*Project, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	for d := abs; ; d = filepath.Dir(d) {
		b, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil {
			path := modfile.ModulePath(b)
			if path == "" {
				return nil, fmt.Errorf("%s: no module line", filepath.Join(d, "go.mod"))
			}
			return &Project{Root: d, Module: path}, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		if parent := filepath.Dir(d); parent == d {
			return nil, fmt.Errorf("no go.mod in %s or above: run mcpfn in your module (`mcpfn init <module path>` makes one)", abs)
		}
	}
}

// TemplatePath is the project's template.yaml.
func (p *Project) TemplatePath() string { return filepath.Join(p.Root, TemplateFile) }

// CatalogPath is the project's catalog file.
func (p *Project) CatalogPath() string { return filepath.Join(p.Root, catalog.FileName) }

// toolDir is a tool name usable as a directory and a tool name at once.
var toolDir = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// Functions returns the names of the directories under functions/ that hold
// a main.go, sorted: the project's tool functions.
func (p *Project) Functions() ([]string, error) {
	mains, err := filepath.Glob(filepath.Join(p.Root, FunctionsDir, "*", "main.go"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range mains {
		name := filepath.Base(filepath.Dir(m))
		if !toolDir.MatchString(name) {
			return nil, fmt.Errorf("%s: a tool function's directory is its tool's name ([a-zA-Z0-9_-]{1,64})", filepath.Dir(m))
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out, nil
}

// Package is the import path (relative to the module root) of a function.
func Package(function string) string { return "./" + FunctionsDir + "/" + function }

// Rel is path relative to the project root when it is inside it.
func (p *Project) Rel(path string) string {
	if r, err := filepath.Rel(p.Root, path); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return path
}

// EnvCacheDir moves mcpfn's per-user cache (default: mcpfn under the
// user's cache directory, e.g. ~/.cache/mcpfn).
const EnvCacheDir = "MCPFN_CACHE_DIR"

// CacheDir is mcpfn's per-user cache: what mcpfn builds and installs for a
// project lives there, never in the project.
func CacheDir() (string, error) {
	if d := os.Getenv(EnvCacheDir); d != "" {
		return filepath.Abs(d)
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory (%v): set %s", err, EnvCacheDir)
	}
	return filepath.Join(d, "mcpfn"), nil
}

// OwnFunction is the Go main package of a function of the project's own (not
// a tool, not mcpfn's skeleton), from its CodeUri: the directory, relative to
// the root, when it holds a main package ("./workers/orders"); "" when it
// does not (a function built some other way, e.g. by a Makefile rule of the
// project's own).
func (p *Project) OwnFunction(codeURI string) string {
	rel := filepath.Clean(filepath.FromSlash(strings.TrimSpace(codeURI)))
	if codeURI == "" || filepath.IsAbs(rel) || rel == "." || strings.HasPrefix(rel, "..") {
		return ""
	}
	pkg, err := build.ImportDir(filepath.Join(p.Root, rel), 0)
	if err != nil || pkg.Name != "main" {
		return ""
	}
	return "./" + filepath.ToSlash(rel)
}
