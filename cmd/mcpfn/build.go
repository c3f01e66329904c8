package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/mcpfn/mcpfn/catalog"
	"github.com/mcpfn/mcpfn/internal/project"
	"github.com/mcpfn/mcpfn/internal/samtemplate"
)

// The functions of mcpfn's skeleton, built from mcpfn's own code with the
// project's catalog beside the bootstrap.
var skeletonFunctions = map[string]string{
	"GatewayFunction":              "github.com/mcpfn/mcpfn/cmd/mcpfn-gateway",
	"AgentCoreInterceptorFunction": "github.com/mcpfn/mcpfn/cmd/mcpfn-interceptor",
}

// runBuild is `mcpfn build [-o DIR] LogicalId…` (sam build's glue: the
// scaffold's Makefile runs `go tool mcpfn build -o $(ARTIFACTS_DIR) $*` for
// every function with BuildMethod makefile) and `mcpfn build -all -o DIR`.
func runBuild(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpfn build", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", os.Getenv("ARTIFACTS_DIR"), "the directory the bootstrap goes to (sam build sets ARTIFACTS_DIR); with -all, DIR/<LogicalId>/bootstrap")
	all := fs.Bool("all", false, "build every function of template.yaml")
	tags := fs.String("tags", os.Getenv("BUILD_TAGS"), "build tags besides lambda.norpc, e.g. mcpfn_otel (env BUILD_TAGS)")
	if fs.Parse(args) != nil || (*all == (fs.NArg() > 0)) || *out == "" {
		fmt.Fprintln(stderr, "usage: mcpfn build -o DIR LogicalId…  |  mcpfn build -all -o DIR")
		return 2
	}
	p, err := project.Find(".")
	if err != nil {
		return fail(stderr, "build", err)
	}
	t, err := samtemplate.Load(p.TemplatePath())
	if err != nil {
		return fail(stderr, "build", fmt.Errorf("%w (`mcpfn template` writes template.yaml)", err))
	}
	cat, err := catalog.Load(p.CatalogPath())
	if err != nil {
		return fail(stderr, "build", err)
	}
	ids := fs.Args()
	if *all {
		ids = t.LogicalIDs(samtemplate.TypeServerlessFunction)
	}
	for _, id := range ids {
		dir := *out
		if *all {
			dir = filepath.Join(*out, id)
		}
		if err := buildFunction(ctx, p, t, cat, id, dir, *tags); err != nil {
			return fail(stderr, "build", err)
		}
		fmt.Fprintf(stdout, "built %s -> %s\n", id, filepath.Join(dir, "bootstrap"))
	}
	return 0
}

// buildFunction builds function id for Lambda into dir/bootstrap: static,
// trimmed and stripped (the same commit builds the same bytes), without
// aws-lambda-go's RPC mode, for the architecture the template gives it.
func buildFunction(ctx context.Context, p *project.Project, t *samtemplate.Template, cat *catalog.File, id, dir, tags string) error {
	r, ok := t.Resource(id)
	if !ok || r.Type != samtemplate.TypeServerlessFunction {
		return fmt.Errorf("template.yaml has no AWS::Serverless::Function %s", id)
	}
	pkg, withCatalog := skeletonFunctions[id], true
	if pkg == "" {
		withCatalog = false
		for _, e := range cat.Tools {
			if e.Function == id {
				pkg = e.Package
			}
		}
	}
	if pkg == "" {
		codeURI, _ := r.Properties["CodeUri"].(string)
		pkg = p.OwnFunction(codeURI)
	}
	if pkg == "" {
		return fmt.Errorf("no code for %s: a tool function is functions/<tool>/main.go (then run `mcpfn template`); a function of your own needs a CodeUri that is its Go main package's directory, or a `build-%s` rule of your own in the Makefile", id, id)
	}
	arch, err := architecture(t, r)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	buildTags := "lambda.norpc"
	if tags = strings.Trim(tags, ", "); tags != "" {
		buildTags += "," + tags
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-tags", buildTags, "-ldflags=-s -w -buildid=",
		"-o", filepath.Join(dir, "bootstrap"), pkg)
	cmd.Dir = p.Root
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+arch, "CGO_ENABLED=0")
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, buf.String())
	}
	if withCatalog {
		b, err := os.ReadFile(p.CatalogPath())
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, catalog.FileName), b, 0o644)
	}
	return nil
}

// architecture is the GOARCH of a function's Architectures (Lambda's
// default x86_64), from the function or Globals.
func architecture(t *samtemplate.Template, r samtemplate.Resource) (string, error) {
	v, ok := r.Properties["Architectures"]
	if !ok {
		g, _ := t.Globals["Function"].(map[string]any)
		v = g["Architectures"]
	}
	list, _ := v.([]any)
	arch := "x86_64"
	if len(list) == 1 {
		arch = fmt.Sprint(list[0])
	}
	switch arch {
	case "arm64":
		return "arm64", nil
	case "x86_64":
		return "amd64", nil
	}
	return "", fmt.Errorf("%s: Architectures %v: want [arm64] or [x86_64]", r.LogicalID, v)
}
