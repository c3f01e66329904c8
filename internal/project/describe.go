package project

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/mcpfn/mcpfn/adapter"
	"github.com/mcpfn/mcpfn/catalog"
)

// describeTimeout bounds one function's describe run: it prints and exits
// before its main does anything else.
const describeTimeout = 30 * time.Second

// Catalog builds every tool function of the project for this machine into
// binDir (binDir/<function>), asks each for its tool's declaration
// and returns the catalog they make. progress hears of the build.
func (p *Project) Catalog(ctx context.Context, binDir string, progress io.Writer) (*catalog.File, error) {
	fns, err := p.Functions()
	if err != nil {
		return nil, err
	}
	if len(fns) == 0 {
		return &catalog.File{Version: catalog.Version, Tools: []catalog.Entry{}}, nil
	}
	start := time.Now()
	fmt.Fprintf(progress, "mcpfn: building %d tool functions to read their declarations…\n", len(fns))
	bins, err := p.BuildHost(ctx, binDir, fns)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(progress, "mcpfn: built %d tool functions (%v)\n", len(fns), time.Since(start).Round(time.Millisecond))
	return CatalogOf(ctx, bins)
}

// CatalogOf asks each built function (function name → bootstrap path) for
// its declaration and returns the catalog, tools in function-name order.
func CatalogOf(ctx context.Context, bins map[string]string) (*catalog.File, error) {
	f := &catalog.File{Version: catalog.Version, Tools: []catalog.Entry{}}
	names := make([]string, 0, len(bins))
	for fn := range bins {
		names = append(names, fn)
	}
	sortStrings(names)
	ids := map[string]string{}
	for _, fn := range names {
		d, err := Describe(ctx, bins[fn])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", Package(fn), err)
		}
		if d.Name != fn {
			return nil, fmt.Errorf("%s serves tool %q: name its directory after its tool (%s/%s)", Package(fn), d.Name, FunctionsDir, d.Name)
		}
		id := catalog.FunctionID(d.Name)
		if other, ok := ids[id]; ok {
			return nil, fmt.Errorf("tools %s and %s would both deploy as %s: rename one", other, d.Name, id)
		}
		ids[id] = d.Name
		f.Tools = append(f.Tools, catalog.Entry{Function: id, Package: Package(fn), Tool: d})
	}
	if _, err := f.Declared(); err != nil {
		return nil, err
	}
	return f, nil
}

// Describe runs a function binary in describe mode and returns its tool's
// declaration. The binary gets no environment but MCPFN_DESCRIBE and what a
// process needs to run, so a declaration can never depend on a developer's
// settings.
func Describe(ctx context.Context, bootstrap string) (adapter.Declaration, error) {
	ctx, cancel := context.WithTimeout(ctx, describeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bootstrap)
	cmd.Env = []string{adapter.EnvDescribe + "=1", "PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + os.TempDir()}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return adapter.Declaration{}, fmt.Errorf("asking the function for its tool (%s=1) failed: %v\n%s\n"+
			"A tool function's main must call adapter.Start or adapter.Serve before anything else, e.g.\n"+
			"\tfunc main() { adapter.Serve(tools.NoteAdd, tools.StoreFromEnv) }",
			adapter.EnvDescribe, err, strings.TrimSpace(stderr.String()))
	}
	return adapter.ParseDescription(stdout.Bytes())
}
