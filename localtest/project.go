package localtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/mcpfn/mcpfn/catalog"
	"github.com/mcpfn/mcpfn/internal/project"
	"github.com/mcpfn/mcpfn/internal/samgen"
	"github.com/mcpfn/mcpfn/internal/samtemplate"
)

// loadProject finds the project (Config.Root, else the working directory's
// module) and reads its template and catalog: the stack serves that
// project's functions, tables and tools, never a list compiled into mcpfn.
func (s *Stack) loadProject() error {
	root := s.cfg.Root
	if root == "" {
		p, err := project.Find(".")
		if err != nil {
			return fmt.Errorf("localtest: %w", err)
		}
		root = p.Root
	}
	var err error
	if s.root, err = filepath.Abs(root); err != nil {
		return err
	}
	path := filepath.Join(s.root, project.TemplateFile)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("localtest: %s has no %s: `mcpfn template` writes it from the tools' declarations", s.root, project.TemplateFile)
	}
	if s.tmpl, err = samtemplate.Load(path); err != nil {
		return err
	}
	if s.cat, err = catalog.Load(filepath.Join(s.root, catalog.FileName)); err != nil {
		return fmt.Errorf("localtest: %w", err)
	}
	declared, err := s.cat.Declared()
	if err != nil {
		return err
	}
	s.tools = append(declared, s.cfg.ExtraTools...)
	for _, t := range s.tools {
		for _, sc := range t.Scopes() {
			if !slices.Contains(s.scopes, sc) {
				s.scopes = append(s.scopes, sc)
			}
		}
	}
	slices.Sort(s.scopes)
	return nil
}

// Scopes are the scopes of the READY token: every scope the stack's tools
// require, so the local user may call every tool (others are minted with
// MintToken or `mcpfn token`).
func (s *Stack) Scopes() []string { return slices.Clone(s.scopes) }

// checkCurrent asks every tool function just built for its declaration and
// fails, naming the command that fixes it, when the catalog or the
// template's mcpfn regions are not what those declarations generate: the
// stack runs what `sam deploy` would ship, never a stale catalog.
func (s *Stack) checkCurrent(ctx context.Context) error {
	bins := map[string]string{}
	for _, e := range s.cat.Tools {
		f := s.functions[e.Function]
		if f == nil {
			return fmt.Errorf("localtest: %s names function %s for tool %s, which %s does not define: run `mcpfn template`", catalog.FileName, e.Function, e.Tool.Name, project.TemplateFile)
		}
		bins[filepath.Base(e.Package)] = f.bootstrap
	}
	described, err := project.CatalogOf(ctx, bins)
	if err != nil {
		return fmt.Errorf("localtest: %w", err)
	}
	stale := errors.New("localtest: the tools' declarations changed since template.yaml and mcpfn-tools.json were generated: run `mcpfn template`")
	if len(described.Tools) != len(s.cat.Tools) {
		return stale
	}
	for i, e := range described.Tools {
		a, _ := json.Marshal(e)
		b, _ := json.Marshal(s.cat.Tools[i])
		if !bytes.Equal(a, b) {
			return fmt.Errorf("%w (tool %s)", stale, e.Tool.Name)
		}
	}
	src, err := os.ReadFile(s.tmpl.Path)
	if err != nil {
		return err
	}
	regenerated, err := samgen.Generate(src, described, "")
	if err != nil {
		return fmt.Errorf("localtest: %s: %w", project.TemplateFile, err)
	}
	if !bytes.Equal(regenerated, src) {
		return fmt.Errorf("localtest: %s's mcpfn regions are not what the tools' declarations generate (edited by hand, or stale): run `mcpfn template`", project.TemplateFile)
	}
	return nil
}

// toolEntry returns the catalog's entry for a function's logical id.
func toolEntry(cat *catalog.File, logicalID string) (catalog.Entry, bool) {
	for _, e := range cat.Tools {
		if e.Function == logicalID {
			return e, true
		}
	}
	return catalog.Entry{}, false
}
