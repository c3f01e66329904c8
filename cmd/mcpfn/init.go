package main

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"text/template"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"

	"github.com/mcpfn/mcpfn/internal/project"
)

// scaffold is what `mcpfn init` writes, as text templates (".tmpl" dropped
// from each name; gitignore becomes .gitignore).
//
//go:embed scaffold
var scaffold embed.FS

// unpublished is the version a replaced, unpublished mcpfn is required at.
const unpublished = "v0.0.0-00010101000000-000000000000"

// runInit is `mcpfn init [-dir DIR] [-mcpfn CHECKOUT] <module path>`: a
// working project in an empty directory — go.mod (mcpfn required, `mcpfn`
// a tool of the module), one tool with its test and its function,
// template.yaml and mcpfn-tools.json generated from it, events/,
// samconfig.toml and the Makefile rule sam build needs — then `go mod tidy`.
func runInit(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("mcpfn init", flag.ContinueOnError)
	fl.SetOutput(stderr)
	dir := fl.String("dir", ".", "the (empty) directory to create the project in")
	checkout := fl.String("mcpfn", "", "a checkout of mcpfn to use through a replace directive (default: the one this mcpfn was built from, if any)")
	if fl.Parse(args) != nil || fl.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: mcpfn init [-dir DIR] [-mcpfn CHECKOUT] <module path>, e.g. mcpfn init example.com/notes")
		return 2
	}
	mod := fl.Arg(0)
	if err := module.CheckPath(mod); err != nil {
		return fail(stderr, "init", fmt.Errorf("%q is not a module path: %v (e.g. example.com/notes or github.com/you/notes)", mod, err))
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return fail(stderr, "init", err)
	}
	if err := emptyDir(abs); err != nil {
		return fail(stderr, "init", err)
	}
	require, replace, err := mcpfnRequirement(*checkout)
	if err != nil {
		return fail(stderr, "init", err)
	}
	if err := writeScaffold(abs, mod, require, replace); err != nil {
		return fail(stderr, "init", err)
	}
	fmt.Fprintf(stderr, "mcpfn: wrote the project; go mod tidy…\n")
	if err := goCmd(ctx, abs, stderr, "mod", "tidy"); err != nil {
		return fail(stderr, "init", err)
	}
	p, err := project.Find(abs)
	if err != nil {
		return fail(stderr, "init", err)
	}
	gen, err := generate(ctx, p, stderr)
	if err != nil {
		return fail(stderr, "init", err)
	}
	for _, f := range gen.files() {
		if err := os.WriteFile(f.path, f.data, 0o644); err != nil {
			return fail(stderr, "init", err)
		}
	}
	if _, err := writeMissingEvents(p, gen.catalog); err != nil {
		return fail(stderr, "init", err)
	}
	fmt.Fprintf(stdout, `Created %s in %s (mcpfn %s).

  cd %s
  go test ./...            the tool's test (mcpfntest)
  go tool mcpfn local      the project on this machine: READY mcp=… token=…
  sam build && sam deploy --guided

Add a tool: handlers/<tool>.go, functions/<tool>/main.go, its test, then
go tool mcpfn template.
`, mod, abs, describeRequirement(require, replace), abs)
	return 0
}

// emptyDir accepts a missing or empty directory (dot-files such as .git
// allowed) and creates it.
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			return fmt.Errorf("%s is not empty (it holds %s): mcpfn init creates a project in an empty directory", dir, e.Name())
		}
	}
	return nil
}

// mcpfnRequirement is how the new module requires mcpfn: this binary's own
// version when it is a published one; a replace directive to checkout, or
// to the checkout this binary was built from (`go run ./cmd/mcpfn init` in
// a clone; a project's `go tool mcpfn` whose go.mod replaces mcpfn).
func mcpfnRequirement(checkout string) (version, replaceDir string, err error) {
	if checkout != "" {
		dir, err := mcpfnCheckout(checkout)
		return unpublished, dir, err
	}
	v, dir := mcpfnModule()
	if dir != "" {
		d, err := mcpfnCheckout(dir)
		return unpublished, d, err
	}
	if strings.HasPrefix(v, "v") && v != unpublished {
		return v, "", nil
	}
	// Built from a clone without -trimpath: its source is where it was.
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		if d, err := mcpfnCheckout(filepath.Join(filepath.Dir(file), "..", "..")); err == nil {
			return unpublished, d, nil
		}
	}
	return "", "", fmt.Errorf("this mcpfn (%s) is not a published version and knows no checkout of its source: pass -mcpfn <checkout of github.com/mcpfn/mcpfn>, or run a published one (go run github.com/mcpfn/mcpfn/cmd/mcpfn@latest init …)", cmpOr(v, "unknown version"))
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// mcpfnCheckout checks that dir holds mcpfn's module and returns it absolute.
func mcpfnCheckout(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(filepath.Join(abs, "go.mod"))
	if err != nil || modfile.ModulePath(b) != modulePath {
		return "", fmt.Errorf("%s is not a checkout of %s", abs, modulePath)
	}
	return abs, nil
}

func describeRequirement(version, replaceDir string) string {
	if replaceDir != "" {
		return "from " + replaceDir
	}
	return version
}

// writeScaffold writes go.mod and the scaffold's files into dir.
func writeScaffold(dir, mod, version, replaceDir string) error {
	goVersion := strings.TrimPrefix(runtime.Version(), "go")
	if i := strings.IndexAny(goVersion, " -+"); i >= 0 {
		goVersion = goVersion[:i]
	}
	if !regexp.MustCompile(`^1\.\d+(\.\d+)?$`).MatchString(goVersion) {
		goVersion = "1.26"
	}
	var gomod bytes.Buffer
	fmt.Fprintf(&gomod, "module %s\n\ngo %s\n\nrequire %s %s\n", mod, goVersion, modulePath, version)
	if replaceDir != "" {
		fmt.Fprintf(&gomod, "\nreplace %s => %s\n", modulePath, replaceDir)
	}
	// mcpfn is a tool of the module: `go tool mcpfn …` runs the version
	// go.mod requires, and go.sum covers everything it builds (the
	// gateway included).
	fmt.Fprintf(&gomod, "\ntool %s/cmd/mcpfn\n", modulePath)
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), gomod.Bytes(), 0o644); err != nil {
		return err
	}
	data := struct{ Module, Stack string }{mod, stackName(mod)}
	return fs.WalkDir(scaffold, "scaffold", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel := strings.TrimSuffix(strings.TrimPrefix(p, "scaffold/"), ".tmpl")
		if rel == "gitignore" {
			rel = ".gitignore"
		}
		src, err := scaffold.ReadFile(p)
		if err != nil {
			return err
		}
		t, err := template.New(path.Base(p)).Parse(string(src))
		if err != nil {
			return err
		}
		var out bytes.Buffer
		if err := t.Execute(&out, data); err != nil {
			return err
		}
		target := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		return os.WriteFile(target, out.Bytes(), 0o644)
	})
}

// stackName is a CloudFormation stack name from a module path's last
// element: letters, digits and dashes.
func stackName(mod string) string {
	name := regexp.MustCompile(`[^A-Za-z0-9-]+`).ReplaceAllString(path.Base(mod), "-")
	name = strings.Trim(name, "-")
	if name == "" || !regexp.MustCompile(`^[A-Za-z]`).MatchString(name) {
		name = "mcpfn-" + name
	}
	return strings.TrimSuffix(name, "-")
}

// goCmd runs the go command in dir, its output to w.
func goCmd(ctx context.Context, dir string, w io.Writer, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = w, w
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s: %w", strings.Join(args, " "), err)
	}
	return nil
}
