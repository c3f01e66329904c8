package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/mcpfn/mcpfn/catalog"
	"github.com/mcpfn/mcpfn/internal/linediff"
	"github.com/mcpfn/mcpfn/internal/project"
	"github.com/mcpfn/mcpfn/internal/samgen"
)

// runTemplate is `mcpfn template [-check [-no-validate]]`: ask every tool
// function for its declaration, then write (or, with -check, compare)
// template.yaml's mcpfn regions, mcpfn-tools.json and the events/ files of
// new tools; -check also runs the CloudFormation validator over the
// template.
func runTemplate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpfn template", flag.ContinueOnError)
	fs.SetOutput(stderr)
	check := fs.Bool("check", false, "write nothing; fail with a diff when template.yaml or mcpfn-tools.json is not what the declarations generate, or a generated role was widened outside mcpfn's regions; "+
		"fail on the FATAL and ERROR findings of the CloudFormation validator (@aws/cloudformation-validate) over template.yaml, run with the node on PATH (skipped without Node.js; installed into the per-user cache on first use), and show its WARN findings")
	noValidate := fs.Bool("no-validate", false, "with -check: do not run the CloudFormation validator (offline, before its first install)")
	if fs.Parse(args) != nil || fs.NArg() != 0 {
		return 2
	}
	p, err := project.Find(".")
	if err != nil {
		return fail(stderr, "template", err)
	}
	gen, err := generate(ctx, p, stderr)
	if err != nil {
		return fail(stderr, "template", err)
	}
	if *check {
		return checkGenerated(ctx, p, gen, !*noValidate, stdout, stderr)
	}
	for _, f := range gen.files() {
		old, _ := os.ReadFile(f.path)
		if bytes.Equal(old, f.data) {
			continue
		}
		if err := os.WriteFile(f.path, f.data, 0o644); err != nil {
			return fail(stderr, "template", err)
		}
		fmt.Fprintf(stdout, "wrote %s\n", p.Rel(f.path))
	}
	written, err := writeMissingEvents(p, gen.catalog)
	if err != nil {
		return fail(stderr, "template", err)
	}
	for _, path := range written {
		fmt.Fprintf(stdout, "wrote %s (an example call: edit its arguments)\n", p.Rel(path))
	}
	if err := rolesNotWidened(gen.template); err != nil {
		fmt.Fprintf(stderr, "mcpfn template: warning: %v\n", err)
	}
	return 0
}

// generated is what `mcpfn template` writes.
type generated struct {
	catalogPath, templatePath string
	catalog                   *catalog.File
	catalogJSON, template     []byte
}

type file struct {
	path string
	data []byte
}

func (g *generated) files() []file {
	return []file{{g.templatePath, g.template}, {g.catalogPath, g.catalogJSON}}
}

// generate builds the project's tool functions, reads their declarations and
// renders the catalog and the template.
func generate(ctx context.Context, p *project.Project, progress io.Writer) (*generated, error) {
	bin, err := p.BuildDir()
	if err != nil {
		return nil, err
	}
	cat, err := p.Catalog(ctx, bin, progress)
	if err != nil {
		return nil, err
	}
	src, err := os.ReadFile(p.TemplatePath())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	tmpl, err := samgen.Generate(src, cat, p.Module+" — MCP tools on AWS Lambda (mcpfn)")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", project.TemplateFile, err)
	}
	js, err := cat.Marshal()
	if err != nil {
		return nil, err
	}
	return &generated{catalogPath: p.CatalogPath(), templatePath: p.TemplatePath(), catalog: cat, catalogJSON: js, template: tmpl}, nil
}

// checkGenerated is -check: every file as generated, no role widened, every
// tool's events file, and, if validate, no error the CloudFormation
// validator finds in the template (validateTemplate).
func checkGenerated(ctx context.Context, p *project.Project, gen *generated, validate bool, stdout, stderr io.Writer) int {
	stale := false
	for _, f := range gen.files() {
		old, err := os.ReadFile(f.path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fail(stderr, "template", err)
		}
		if d := linediff.Unified(p.Rel(f.path), p.Rel(f.path)+" (as generated)", string(old), string(f.data), 3); d != "" {
			stale = true
			fmt.Fprint(stdout, d)
		}
	}
	var problems []error
	if stale {
		problems = append(problems, errors.New("template.yaml or mcpfn-tools.json is not what the tools' declarations generate (a declaration changed, or a generated region was edited by hand): run `mcpfn template`"))
	}
	if err := rolesNotWidened(gen.template); err != nil {
		problems = append(problems, err)
	}
	if err := eventsPresent(p, gen.catalog); err != nil {
		problems = append(problems, err)
	}
	if !validate {
		fmt.Fprintln(stdout, "skipped the CloudFormation validator (-no-validate)")
	} else if _, err := os.Stat(gen.templatePath); err == nil { // else the diff says it is missing
		if err := validateTemplate(ctx, gen.templatePath, p.Rel(gen.templatePath), stdout, stderr); err != nil {
			problems = append(problems, err)
		}
	}
	if len(problems) > 0 {
		return fail(stderr, "template -check", errors.Join(problems...))
	}
	fmt.Fprintf(stdout, "%s and %s are current (%d tools)\n", project.TemplateFile, catalog.FileName, len(gen.catalog.Tools))
	return 0
}
